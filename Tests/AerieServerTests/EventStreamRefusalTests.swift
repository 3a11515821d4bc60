import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Logging
import Synchronization
import Testing

@testable import AerieServer

/// The event stream when its session refuses a notification: a queue that filled between the
/// stream's look at the room and its send (other notifications took the room) makes the stream
/// wait and go on from the last position it sent, losing nothing and sending nothing twice; a
/// session that closes stops it. Driven through `EventStreams` itself with a session double, on
/// a real log (PostgreSQL) written through a live server.
@Suite(.timeLimit(.minutes(10))) struct EventStreamRefusalTests {
    /// A session whose queue turns out full at the `refuseAt`-th notification: that send is
    /// refused and the room reads 0 for `emptyReads` looks more, then there is room again.
    final class FillingSession: SessionHandle {
        let id: UInt64
        private struct State {
            var sends = 0
            var emptyReadsLeft = 0
            var refused = 0
            var received: [JSONValue] = []
            var closeActions: [@Sendable () -> Void] = []
        }
        private let state = Mutex(State())
        private let refuseAt: Int
        private let emptyReads: Int

        init(id: UInt64 = 7_000_001, refuseAt: Int, emptyReads: Int) {
            self.id = id
            self.refuseAt = refuseAt
            self.emptyReads = emptyReads
        }

        func notify(method: String, params: JSONValue) -> Bool {
            state.withLock { state in
                state.sends += 1
                if state.sends == refuseAt {
                    state.refused += 1
                    state.emptyReadsLeft = emptyReads
                    return false
                }
                state.received.append(params)
                return true
            }
        }

        var notificationRoom: Int {
            state.withLock { state in
                guard state.emptyReadsLeft == 0 else {
                    state.emptyReadsLeft -= 1
                    return 0
                }
                return 3
            }
        }

        func onClose(_ action: @escaping @Sendable () -> Void) { state.withLock { $0.closeActions.append(action) } }

        func close() {
            for action in state.withLock({ $0.closeActions }) { action() }
        }

        var received: [JSONValue] { state.withLock { $0.received } }
        var refusals: Int { state.withLock { $0.refused } }
    }

    @Test func aQueueThatFillsMidPageMakesTheStreamWaitAndGoOnLosingNothing() async throws {
        try await LiveServer.with { server in
            let database = server.database.runtime()
            let backend = try await EventLogTests.backend(server, "refusal", tenants: 2)
            await backend.session.close()
            var written: [String] = []
            for n in 0..<12 { written.append(try await EventLogTests.newConnection(database, tenant: backend.tenants[n % 2])) }

            let streams = EventStreams(
                log: database.events, retention: .seconds(3600), pruneInterval: .seconds(3600), tick: .milliseconds(50),
                logger: Logger(label: "test"), presenters: EventPresenters())
            let running = Task { try await streams.run() }
            // A page holds at most the room (3): the 5th send, the second of the second page, is
            // refused, and the room reads 0 four times before the "writer" frees it.
            let session = FillingSession(refuseAt: 5, emptyReads: 4)
            try streams.subscribe(
                session: session, backend: try #require(BackendID(backend.id)), tokenHash: TokenHasher.hash(backend.token), after: 0)
            for _ in 0..<3000 where session.received.count < written.count { try await Task.sleep(for: .milliseconds(20)) }
            // A marker event after them: once it is in, anything sent twice before it is too.
            written.append(try await EventLogTests.newConnection(database, tenant: backend.tenants[1]))
            for _ in 0..<3000 where session.received.count < written.count { try await Task.sleep(for: .milliseconds(20)) }

            let events = session.received
            let logged = try await database.events.read(
                backend: try #require(BackendID(backend.id)), tokenHash: TokenHasher.hash(backend.token), after: 0, limit: 100)
            guard case .events(let expected) = logged else { Issue.record("the backend's credential is not valid"); return }
            #expect(expected.count == written.count)
            #expect(session.refusals == 1)
            // Every event once, in position order: the refused one was sent again, nothing twice.
            #expect(EventLogTests.positions(events) == expected.map(\.position))

            // A session that closes ends its stream: nothing is sent to it afterwards, while
            // another session of the backend, the marker, gets the next event.
            session.close()
            #expect(streams.unsubscribe(sessionID: session.id) == false, "the closed session still has a stream")
            let marker = FillingSession(id: session.id + 1, refuseAt: 0, emptyReads: 0)
            try streams.subscribe(
                session: marker, backend: try #require(BackendID(backend.id)), tokenHash: TokenHasher.hash(backend.token),
                after: try #require(expected.last?.position))
            written.append(try await EventLogTests.newConnection(database, tenant: backend.tenants[0]))
            for _ in 0..<3000 where marker.received.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
            #expect(marker.received.count == 1)
            #expect(session.received.count == events.count)

            running.cancel()
            _ = try? await running.value
            await database.shutdown()
        }
    }
}
