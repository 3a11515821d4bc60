import AerieCore
import Foundation
import Testing

@testable import AerieServer

/// The delivery hand-off's rules without I/O (`OutboxWakeup`): which rows are handed over and
/// which need a scan, when the lease is offered, and the order and limits rows start in. The
/// store's side (rows handed over only once committed, leased until then) is
/// `InboundPathStoreTests`; the crash and restart cases are `CrashSafetyTests`.
@Suite(.timeLimit(.minutes(10))) struct OutboxHandoffTests {
    let tenant = TenantID(UUID().uuidString.lowercased())!
    let lease = OutboxLease(instance: "server-1", seconds: 120)

    func item(_ endpoint: String, leasedBy: String?) -> OutboxItem {
        var item = OutboxItem(connectionId: nil, endpoint: endpoint, envelope: [1])
        item.leasedBy = leasedBy
        return item
    }

    @Test func leasesOnlyOnceThePreviousRunsLeasesAreBackAndWhileTheBacklogHasRoom() {
        let wakeup = OutboxWakeup(lease: lease, maxHanded: 2)
        // Until the service took back its previous run's leases, rows are inserted due.
        #expect(wakeup.enqueueLease == nil)
        wakeup.startLeasing()
        #expect(wakeup.enqueueLease == lease)
        wakeup.committed([item("http://a.example/1", leasedBy: "server-1"), item("http://a.example/2", leasedBy: "server-1")], tenant: tenant)
        // A full backlog: new rows go to the database due, for the scan, not to memory.
        #expect(wakeup.enqueueLease == nil)
        _ = wakeup.takeHanded { DeliveryLimits.Slot(destination: $0, key: $0) }
        #expect(wakeup.enqueueLease == lease)
        // No delivery service in this process: never a lease.
        let none = OutboxWakeup(lease: nil)
        none.startLeasing()
        #expect(none.enqueueLease == nil)
    }

    @Test func leasedRowsAreHandedOverAndOthersAskForAScan() {
        let wakeup = OutboxWakeup(lease: lease)
        #expect(wakeup.takeScanRequest())  // the first wake-up scans (rows of a previous run)
        #expect(!wakeup.takeScanRequest())
        let mine = item("http://a.example/in", leasedBy: "server-1")
        wakeup.committed([mine], tenant: tenant)
        #expect(!wakeup.takeScanRequest())  // a handed row costs no scan
        // Inserted due (no lease then) or leased by another instance name: the scan's.
        wakeup.committed([item("http://b.example/in", leasedBy: nil)], tenant: tenant)
        #expect(wakeup.takeScanRequest())
        wakeup.committed([item("http://b.example/in", leasedBy: "server-2")], tenant: tenant)
        #expect(wakeup.takeScanRequest())
        let handed = wakeup.takeHanded { DeliveryLimits.Slot(destination: $0, key: $0) }.map(\.row)
        #expect(handed.map(\.item.id) == [mine.id])
        #expect(handed.first?.tenant == tenant)
        #expect(handed.first?.destination == "http://a.example")
        #expect(!wakeup.hasHanded)
        wakeup.outboxChanged()
        #expect(wakeup.takeScanRequest())
    }

    @Test func rowsWhoseDestinationIsBusyWaitInOrder() {
        let wakeup = OutboxWakeup(lease: lease)
        let rows = [
            item("http://slow.example/1", leasedBy: "server-1"), item("http://fast.example/1", leasedBy: "server-1"),
            item("http://slow.example/2", leasedBy: "server-1"), item("http://fast.example/2", leasedBy: "server-1"),
        ]
        wakeup.committed(rows, tenant: tenant)
        let limits = DeliveryLimits(concurrency: 10, perDestination: 1)
        let first = wakeup.takeHanded { limits.start($0) }
        #expect(first.map(\.row.item.id) == [rows[0].id, rows[1].id])
        #expect(wakeup.hasHanded)
        limits.finish(first[0].slot)
        let second = wakeup.takeHanded { limits.start($0) }
        #expect(second.map(\.row.item.id) == [rows[2].id])
        limits.finish(first[1].slot)
        #expect(wakeup.takeHanded { limits.start($0) }.map(\.row.item.id) == [rows[3].id])
        #expect(!wakeup.hasHanded)
    }

    /// The same names `aerie.outbox_destination` (schema/0019) gives scanned rows, so a
    /// destination's limit counts handed and scanned deliveries together.
    @Test func destinationsAreNamedAsTheScanNamesThem() {
        #expect(OutboxItem.destination(of: "HTTPS://Other.Example:8443/x?y#z") == "https://other.example:8443")
        #expect(OutboxItem.destination(of: "http://peer.example/a") == "http://peer.example")
        #expect(OutboxItem.destination(of: "http://peer.example?x") == "http://peer.example")
        #expect(OutboxItem.destination(of: "http://user@host:1#f") == "http://host:1")
        #expect(OutboxItem.destination(of: "https://u:p@ss@Host/x@y") == "https://host")
        #expect(OutboxItem.destination(of: "ws+x.y-z://h") == "ws+x.y-z://h")
        #expect(OutboxItem.destination(of: "1http://h/") == "")
        #expect(OutboxItem.destination(of: "mailto:x@y") == "")
        #expect(OutboxItem.destination(of: "") == "")
        #expect(OutboxItem.destination(of: "http:/") == "")
    }

    @Test func onlyCanonicalVerkeysAmongTheFirstRecipientsAreLookedUp() {
        let verkey = "4koTsSeuhTvYcnNUCpzeazsjzGEh143q1WEDaWKNe8TT"
        #expect(InboundProcessor.candidateRecipients(["did:key:z6Mk", "not base58 0OIl", verkey, ""]) == [verkey])
        let many = Array(repeating: verkey, count: InboundProcessor.maxRecipients + 5)
        #expect(InboundProcessor.candidateRecipients(many).count == InboundProcessor.maxRecipients)
        // A recipient past the first `maxRecipients` is never looked up.
        #expect(InboundProcessor.candidateRecipients(Array(repeating: "junk", count: InboundProcessor.maxRecipients) + [verkey]).isEmpty)
    }
}

/// The inbound pipeline's reading of an opened message, without I/O (`InboundProcessor.read`).
@Suite(.timeLimit(.minutes(10))) struct InboundReadingTests {
    static let response = "https://didcomm.org/connections/1.0/response"

    func router() throws -> MethodRouter {
        var router = MethodRouter()
        try router.registerInbound(Self.response, from: .handshakeResponse) { _, _ in }
        return router
    }

    func read(_ text: String, depth: Int = 0) throws -> InboundProcessor.Step {
        let bytes = Array(text.utf8)
        return InboundProcessor.read(try? JSONValue(parsing: bytes), plaintext: bytes, depth: depth, router: try router())
    }

    func refusal(_ step: InboundProcessor.Step) -> String? {
        if case .refuse(let reason) = step { return reason }
        return nil
    }

    @Test func aRegisteredTypeWithAnIdIsHandedOnNormalised() throws {
        let legacy = #"{"@type":"did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/connections/1.0/response","@id":"r-1","~thread":{"thid":"t-1"}}"#
        guard case .handle(let message, let type, let id, let thread, let route) = try read(legacy) else {
            Issue.record("not handed on")
            return
        }
        #expect(type == Self.response && route.type == Self.response && route.senders == .handshakeResponse)
        #expect(id == "r-1" && thread == "t-1" && message["@id"] == "r-1")
        // A thread id over its limit is refused, not cut (`PeerFieldLimits.id`).
        let atLimit = String(repeating: "t", count: PeerFieldLimits.id.maxBytes)
        guard case .handle(_, _, _, let whole?, _) = try read(#"{"@type":"\#(Self.response)","@id":"r","~thread":{"thid":"\#(atLimit)"}}"#)
        else {
            Issue.record("not handed on")
            return
        }
        #expect(whole == atLimit)
        #expect(refusal(try read(#"{"@type":"\#(Self.response)","@id":"r","~thread":{"thid":"\#(atLimit)t"}}"#))
            == "~thread.thid is longer than \(PeerFieldLimits.id.maxBytes) bytes")
    }

    @Test func whatIsNotAUsableMessageIsRefusedBeforeAnyLookup() throws {
        #expect(refusal(try read("not json")) == "the message is not a JSON object with @type")
        #expect(refusal(try read(#"["@type"]"#)) == "the message is not a JSON object with @type")
        #expect(refusal(try read(#"{"@id":"x"}"#)) == "the message is not a JSON object with @type")
        #expect(refusal(try read(#"{"@type":"https://didcomm.org/basicmessage/1.0/message","@id":"x"}"#))
            == "unsupported message type https://didcomm.org/basicmessage/1.0/message")
        #expect(refusal(try read(#"{"@type":"\#(Self.response)"}"#)) == "the message has no usable @id")
        #expect(refusal(try read(#"{"@type":"\#(Self.response)","@id":""}"#)) == "the message has no usable @id")
        let longId = String(repeating: "i", count: 257)
        #expect(refusal(try read(#"{"@type":"\#(Self.response)","@id":"\#(longId)"}"#)) == "the message has no usable @id")
    }

    @Test func aForwardIsUnwrappedOnceOnly() throws {
        let inner = #"{"protected":"p","iv":"i","ciphertext":"c","tag":"t"}"#
        let forward = #"{"@type":"https://didcomm.org/routing/1.0/forward","@id":"f","to":"KEY","msg":\#(inner)}"#
        guard case .forward(let packed) = try read(forward) else {
            Issue.record("not unwrapped")
            return
        }
        #expect(try JSONValue(parsing: packed) == JSONValue(parsing: Array(inner.utf8)))
        #expect(refusal(try read(forward, depth: 1)) == "unusable forward message")
        #expect(refusal(try read(#"{"@type":"https://didcomm.org/routing/1.0/forward","@id":"f","to":"KEY"}"#))
            == "unusable forward message")
    }
}
