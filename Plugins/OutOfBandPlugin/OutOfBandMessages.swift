import AerieCore
import AerieCrypto
import Foundation

/// The RFC 0434 messages Aerie writes and reads (invitee, and inviter: invitation, reuse answer).
public enum OutOfBandMessages {
    static let prefix = "https://didcomm.org/out-of-band/"
    /// The minor versions read and answered.
    static let versions = ["1.0", "1.1"]

    public static func reuseType(version: String) -> String { "\(prefix)\(version)/handshake-reuse" }
    public static func reuseAcceptedType(version: String) -> String { "\(prefix)\(version)/handshake-reuse-accepted" }
    public static func problemReportType(version: String) -> String { "\(prefix)\(version)/problem_report" }

    public static var reuseAcceptedTypes: [String] { versions.map(reuseAcceptedType) }
    public static var problemReportTypes: [String] { versions.map(problemReportType) }

    /// The protocol version of an invitation's `@type` that Aerie answers in: its own minor
    /// version when known, else 1.1 (RFC 0003: a peer reads any minor version of its major).
    public static func version(of invitation: Invitation) -> String {
        let type = InboundMessage.normalizedType(invitation.type ?? "")
        return versions.first { type == "\(prefix)\($0)/invitation" } ?? "1.1"
    }

    /// A handshake-reuse: its `@id` is the thread, `pthid` the invitation's `@id`.
    public static func reuse(id: String = UUID.random().lowercasedString, invitationId: String, version: String) -> JSONValue {
        .object([
            "@type": .string(reuseType(version: version)),
            "@id": .string(id),
            "~thread": .object(["thid": .string(id), "pthid": .string(invitationId)]),
        ])
    }

    /// The answer to a handshake-reuse: `thid` the reuse's thread, `pthid` the invitation.
    public static func reuseAccepted(id: String = UUID.random().lowercasedString, threadId: String, invitationId: String,
                                     version: String) -> JSONValue {
        .object([
            "@type": .string(reuseAcceptedType(version: version)),
            "@id": .string(id),
            "~thread": .object(["thid": .string(threadId), "pthid": .string(invitationId)]),
        ])
    }

    /// Our out-of-band 1.1 invitation: one service (inline, or the tenant's invitation DID), the
    /// handshakes offered, and the attached messages as `requests~attach` (JSON).
    public static func invitation(
        id: String = UUID.random().lowercasedString, label: String, handshakeProtocols: [String], attachments: [JSONValue],
        goalCode: String?, goal: String?, service: JSONValue
    ) -> JSONValue {
        var fields: [String: JSONValue] = [
            "@type": .string("\(prefix)1.1/invitation"), "@id": .string(id), "label": .string(label),
            "handshake_protocols": .array(handshakeProtocols.map(JSONValue.string)), "services": [service],
        ]
        if let goalCode { fields["goal_code"] = .string(goalCode) }
        if let goal { fields["goal"] = .string(goal) }
        if !attachments.isEmpty {
            fields["requests~attach"] = .array(
                attachments.map { message in
                    ["@id": .string(UUID.random().lowercasedString), "mime-type": "application/json", "data": ["json": message]]
                })
        }
        return .object(fields)
    }

    /// An inline service: the invitation key as did:key, no routing keys, our endpoint.
    public static func inlineService(recipientKey: String, endpoint: String) throws -> JSONValue {
        let didKey = try AerieError.mappingCrypto { try DIDKey.did(verkeyBase58: recipientKey) }
        return [
            "id": "#inline", "type": "did-communication", "recipientKeys": [.string(didKey)], "routingKeys": [],
            "serviceEndpoint": .string(endpoint),
        ]
    }

    /// The invitation as an `?oob=` URL on `endpoint` (base64url of its JSON, unpadded).
    public static func invitationURL(_ invitation: JSONValue, endpoint: String) -> String {
        endpoint + (endpoint.contains("?") ? "&" : "?") + "oob=" + Base64.encodeURL(invitation.serialized())
    }

    /// `~thread.pthid`, bounded.
    public static func parentThreadId(_ message: JSONValue) -> String? {
        guard let pthid = message["~thread"]?["pthid"]?.stringValue, !pthid.isEmpty, pthid.utf8.count <= 256 else {
            return nil
        }
        return pthid
    }
}
