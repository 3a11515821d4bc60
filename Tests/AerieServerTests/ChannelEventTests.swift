import AerieCore
import Foundation
import Testing

@testable import AerieServer

/// Each NOTIFY payload of `aerie_events` decoded once into what it means (`ChannelEvent`), without
/// I/O; a payload that is none of them (garbage, no tenant, no kind) decodes to nil. What the hub
/// does with each case is tested live (`MessagesPushTests`, `CredentialRevocationTests`,
/// `ConnectionViewCacheTests`, `RecentRecipientsServerTests`, `EventLogTests`).
@Suite struct ChannelEventTests {
    let tenant = TenantID("0b6f4a57-7b53-4a8e-9a2f-4f1f0c3b2a11")!
    let connection = UUID(text: "7c9e6679-7425-40de-944b-e07fc1f90ae7")!

    @Test func positionsNeedNoTenant() {
        #expect(ChannelEvent(payload: #"{"kind":"positions","upTo":42}"#) == .positions)
    }

    @Test func credentialEventsCarryTheCurrentTokenOrNone() {
        #expect(
            ChannelEvent(payload: #"{"tenant":"\#(tenant.rawValue)","kind":"credential","active":true,"credential":"fp"}"#)
                == .credentialChanged(tenant, current: "fp"))
        #expect(
            ChannelEvent(payload: #"{"tenant":"\#(tenant.rawValue)","kind":"credential","active":false,"credential":"fp"}"#)
                == .credentialChanged(tenant, current: nil), "a suspended or deleted tenant has no valid token")
        #expect(
            ChannelEvent(payload: #"{"tenant":"\#(tenant.rawValue)","kind":"credential","active":true}"#)
                == .credentialChanged(tenant, current: ""), "active without a fingerprint matches no session's token")
    }

    @Test func connectionChangesNameOneConnectionOrAll() {
        #expect(
            ChannelEvent(payload: #"{"tenant":"\#(tenant.rawValue)","kind":"connectionChanged","connectionId":"\#(connection.lowercasedString)"}"#)
                == .connectionChanged(tenant, connectionId: connection))
        #expect(
            ChannelEvent(payload: #"{"tenant":"\#(tenant.rawValue)","kind":"connectionChanged"}"#)
                == .connectionChanged(tenant, connectionId: nil))
    }

    @Test func keysDeletedNameOneKeyOrAll() {
        #expect(
            ChannelEvent(payload: #"{"tenant":"\#(tenant.rawValue)","kind":"keysDeleted","verkey":"K1"}"#)
                == .keysDeleted(tenant, verkey: "K1"))
        #expect(ChannelEvent(payload: #"{"tenant":"\#(tenant.rawValue)","kind":"keysDeleted"}"#) == .keysDeleted(tenant, verkey: nil))
    }

    @Test func connectionStatesKeepTheirPayloadForThePush() throws {
        let payload = #"{"tenant":"\#(tenant.rawValue)","kind":"connection","connectionId":"\#(connection.lowercasedString)","state":"accepted","pairwiseDID":"D"}"#
        let data = try JSONValue(parsing: payload)
        #expect(ChannelEvent(payload: payload) == .connectionState(tenant, connectionId: connection, state: "accepted", data: data))
    }

    @Test func otherKindsAreTheTenantsEvents() throws {
        for kind in ["message", "delivery", "someone-elses-kind"] {
            let payload = #"{"tenant":"\#(tenant.rawValue)","kind":"\#(kind)","uid":"u"}"#
            #expect(ChannelEvent(payload: payload) == .tenantEvent(tenant, kind: kind, data: try JSONValue(parsing: payload)))
        }
    }

    @Test func unreadablePayloadsDecodeToNothing() {
        for payload in [
            "", "not json", "[]", #"{"kind":"message"}"#, #"{"tenant":"\#(tenant.rawValue)"}"#,
            #"{"tenant":"not-a-tenant","kind":"message"}"#, #"{"tenant":"\#(tenant.rawValue)","kind":7}"#,
            String(repeating: "{", count: 10_000),
        ] {
            #expect(ChannelEvent(payload: payload) == nil, "\(payload.prefix(40))")
        }
    }
}
