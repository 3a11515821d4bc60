import AerieClient
import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Synchronization
import Testing

/// Issue 12: every inbound message is handled exactly once, crash or not. A handler stores its
/// message in its own write transaction (`InboundMessage.claim(in:)`); one that fails leaves the
/// message stored but unhandled, and the recovery service (or the peer's redelivery) runs it again,
/// bounded; then the connection fails with the reason.
@Suite(.timeLimit(.minutes(10))) struct InboundHandlingTests {
    static let flakyType = "https://didcomm.org/aerie-test/1.0/flaky"

    /// A handler that fails as told (its first attempts, in order), then stores the message and a
    /// setting in one transaction.
    final class FlakyPlugin: AeriePlugin, Sendable {
        static let name = "flaky"
        enum Failure: Sendable { case transient, permanent }
        private let state = Mutex<(failures: [Failure], attempts: Int, handled: Int)>(([], 0, 0))

        convenience init(failFirst: Int, with failure: Failure = .transient) {
            self.init(failing: Array(repeating: failure, count: failFirst))
        }

        init(failing failures: [Failure]) {
            state.withLock { $0 = (failures, 0, 0) }
        }

        var attempts: Int { state.withLock { $0.attempts } }
        var handled: Int { state.withLock { $0.handled } }

        func register(with router: inout MethodRouter) throws {
            try router.registerInbound(InboundHandlingTests.flakyType) { [self] message, tenant in
                let failure = state.withLock { state -> Failure? in
                    state.attempts += 1
                    return state.failures.isEmpty ? nil : state.failures.removeFirst()
                }
                switch failure {
                case .transient?: throw AerieError(.unavailable, "the test database is away")
                case .permanent?: throw AerieError(.conflict, "this message does not apply")
                case nil: break
                }
                try await tenant.database.transaction { tx in
                    guard try message.claim(in: tx) else { return }
                    try tx.settings.set("handled-\(message.id ?? "")", to: .bool(true))
                    self.state.withLock { $0.handled += 1 }
                }
            }
        }
    }

    struct Fixture {
        let server: LiveServer
        let tenant: AerieClient
        let tenantID: TenantID
        let connectionId: String
        let pwVerkey: String
        let sender: Ed25519KeyPair

        func envelope(id: String) throws -> [UInt8] {
            let message = #"{"@type":"\#(InboundHandlingTests.flakyType)","@id":"\#(id)"}"#
            return try DIDCommEnvelope.pack(Array(message.utf8), to: [pwVerkey], from: sender)
        }

        /// (handled, attempts, next retry set) of the tenant's mailbox row for `id`.
        func row(_ id: String) async throws -> (handled: Bool, attempts: Int, retrying: Bool)? {
            let runtime = server.database.runtime(maxConnections: 1)
            defer { Task { await runtime.shutdown() } }
            return try await runtime.withSession(tenant: tenantID) { session in
                let result = try session.query(
                    "SELECT handled_at IS NOT NULL, handle_attempts, next_handle_at IS NOT NULL FROM aerie.mailbox WHERE message_id = $1",
                    [.text(id)])
                guard result.rowCount == 1 else { return nil }
                return (result.bool(0, 0) ?? false, result.int(0, 1) ?? -1, result.bool(0, 2) ?? false)
            }
        }

        func setting(_ id: String) async throws -> JSONValue? {
            try? await tenant.call("settings.get", params: ["key": .string("handled-\(id)")])
        }
    }

    static func with(
        _ plugin: FlakyPlugin, maxAttempts: Int = 5, recovery: Duration = .milliseconds(200), established: Bool = true,
        _ body: (Fixture) async throws -> Void
    ) async throws {
        try await LiveServer.with(extraPlugins: [plugin], server: {
            $0.outbound.allowPrivateURLs = true
            $0.delivery.enabled = false
            $0.didcomm.recoveryInterval = recovery
            $0.didcomm.handlingBackoff = .seconds(1)
            $0.didcomm.handlingMaxAttempts = maxAttempts
        }) { server in
            let (tenant, tenantID) = try await server.tenantClient(label: "alice")
            defer { Task { await tenant.close() } }
            if established {
                let peer = try await TestPeer.connect(tenant)
                try await body(
                    Fixture(
                        server: server, tenant: tenant, tenantID: tenantID, connectionId: peer.connectionId,
                        pwVerkey: peer.pwVerkey, sender: peer.key))
                return
            }
            // Still connecting (state 2, which a failed handling can fail), with the peer's key
            // already known, as between an accepted Response and the end of the handshake.
            let created = try await tenant.call(
                "connections.createWithInvite", params: ["invitation": try DIDCommEndpointTests.deadInvitation()])
            let id = try #require(created["connectionId"]?.stringValue)
            let connected = try await tenant.call("connections.connect", params: ["connectionId": .string(id)])
            let sender = Ed25519KeyPair.generate()
            try await MessagesMailboxTests.setPeer(sender.verkeyBase58, of: id, tenant: tenantID, on: server)
            try await body(
                Fixture(
                    server: server, tenant: tenant, tenantID: tenantID, connectionId: id,
                    pwVerkey: try #require(connected["pwVerkey"]?.stringValue), sender: sender))
        }
    }

    /// Polls `condition` every 50 ms for at most `timeout`.
    static func eventually(_ timeout: Duration = .seconds(20), _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }

    @Test func aFailedHandlingIsRetriedByTheRecoveryServiceAndHandledOnce() async throws {
        let plugin = FlakyPlugin(failFirst: 2)
        try await Self.with(plugin) { f in
            #expect(try await DIDCommEndpointTests.post(try f.envelope(id: "m-1"), to: f.server.didcommPort) == 202)
            // Stored although its handler failed, with the attempt counted and a retry planned.
            let stored = try #require(try await f.row("m-1"))
            #expect(!stored.handled && stored.attempts == 1 && stored.retrying, "\(stored)")
            #expect(try await Self.eventually { try await f.row("m-1")?.handled == true })
            #expect(plugin.handled == 1)
            #expect(plugin.attempts == 3)
            #expect(try await f.setting("m-1")?["value"] == true)
            // The peer sending it again changes nothing.
            #expect(try await DIDCommEndpointTests.post(try f.envelope(id: "m-1"), to: f.server.didcommPort) == 202)
            #expect(plugin.handled == 1)
        }
    }

    /// A redelivered copy of a message whose handling failed runs the handler again; a copy of a
    /// handled one does not.
    @Test func aRedeliveredCopyOfAnUnhandledMessageIsHandled() async throws {
        let plugin = FlakyPlugin(failFirst: 1)
        try await Self.with(plugin, recovery: .seconds(3600)) { f in
            let envelope = try f.envelope(id: "m-2")
            #expect(try await DIDCommEndpointTests.post(envelope, to: f.server.didcommPort) == 202)
            #expect(try await f.row("m-2")?.handled == false)
            #expect(try await DIDCommEndpointTests.post(envelope, to: f.server.didcommPort) == 202)
            #expect(try await f.row("m-2")?.handled == true)
            #expect(plugin.handled == 1)
            #expect(try await DIDCommEndpointTests.post(envelope, to: f.server.didcommPort) == 202)
            #expect(plugin.handled == 1)
            #expect(plugin.attempts == 3)
        }
    }

    /// A message its handler refuses is kept, not retried, and fails nothing: a stranger's
    /// message cannot fail a connection.
    @Test func aRefusedMessageIsKeptButNotRetried() async throws {
        let plugin = FlakyPlugin(failing: [.permanent, .transient])
        try await Self.with(plugin, maxAttempts: 2) { f in
            #expect(try await DIDCommEndpointTests.post(try f.envelope(id: "m-3"), to: f.server.didcommPort) == 202)
            let stored = try #require(try await f.row("m-3"))
            #expect(!stored.handled && stored.attempts == 1 && !stored.retrying, "\(stored)")
            // A marker stored after it fails transiently: once the recovery service has retried the
            // marker, it has passed over the refused row, which, were it retryable, was due first.
            #expect(try await DIDCommEndpointTests.post(try f.envelope(id: "marker"), to: f.server.didcommPort) == 202)
            #expect(try await f.row("marker")?.retrying == true)
            #expect(try await Self.eventually { try await f.row("marker")?.handled == true }, "the marker was never retried")
            let after = try #require(try await f.row("m-3"))
            #expect(!after.handled && after.attempts == 1 && !after.retrying, "\(after)")
            #expect(plugin.attempts == 3)
            let connection = try await f.tenant.call("connections.get", params: ["connectionId": .string(f.connectionId)])
            #expect(connection["state"] == 4, "a refused message fails nothing")
        }
    }

    /// Transient failures up to the limit: then the connection fails, naming the message type.
    @Test func aMessageThatKeepsFailingFailsItsConnectionWithTheReason() async throws {
        let plugin = FlakyPlugin(failFirst: 100)
        try await Self.with(plugin, maxAttempts: 2, established: false) { f in
            #expect(try await DIDCommEndpointTests.post(try f.envelope(id: "m-4"), to: f.server.didcommPort) == 202)
            let failed = try await Self.eventually {
                try await f.tenant.call("connections.get", params: ["connectionId": .string(f.connectionId)])["state"] == 0
            }
            #expect(failed)
            let connection = try await f.tenant.call("connections.get", params: ["connectionId": .string(f.connectionId)])
            let reason = connection["failureReason"]?.stringValue ?? ""
            #expect(reason.contains("flaky") && reason.contains("after 2 attempts"), "\(reason)")
            #expect(plugin.attempts == 2)
            #expect(try await f.row("m-4")?.retrying == false)
        }
    }
}
