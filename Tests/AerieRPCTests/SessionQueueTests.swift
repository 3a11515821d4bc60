import AerieCore
import Synchronization
import Testing

@testable import AerieRPC

/// The per-session notification queue: bounded, one overflow notice, resumes once drained.
@Suite(.timeLimit(.minutes(10))) struct SessionQueueTests {
    @Test func fullQueueSendsOneOverflowNoticeAndResumesWhenDrained() {
        let connection = FakeConnection()
        let session = RPCSession(id: 1, notificationQueueLimit: 2, write: connection.write)
        #expect(session.notify(method: "m", params: 1))
        #expect(session.notify(method: "m", params: 2))
        #expect(!session.notify(method: "m", params: 3))
        #expect(!session.notify(method: "m", params: 4))
        // Handed to the connection in order, the notice last; nothing after it.
        #expect(connection.handed == [1, 2, "overflow"])
        // Not written yet: still dropped.
        #expect(!session.notify(method: "m", params: 5))
        connection.writeAll()
        #expect(session.notify(method: "m", params: 6))
        #expect(connection.handed == [1, 2, "overflow", 6])
    }

    /// A queue that drains only partly keeps dropping: the overflow ends once every line handed
    /// over has been written.
    @Test func overflowLastsUntilEverythingQueuedIsWritten() {
        let connection = FakeConnection()
        let session = RPCSession(id: 3, notificationQueueLimit: 3, write: connection.write)
        for value in 1...5 { session.notify(method: "m", params: .int(Int64(value))) }
        #expect(connection.handed == [1, 2, 3, "overflow"])
        connection.writeOne()
        connection.writeOne()
        #expect(!session.notify(method: "m", params: 6))
        connection.writeAll()
        #expect(session.notify(method: "m", params: 7))
        #expect(connection.handed == [1, 2, 3, "overflow", 7])
    }

    /// A connection whose writes complete only when the test says so; records what was handed
    /// to it (a notification's params, or "overflow" for the notice).
    final class FakeConnection: Sendable {
        private let state = Mutex<(handed: [JSONValue], unwritten: [@Sendable () -> Void])>(([], []))

        var write: RPCSession.Writer {
            { notification, written in
                self.state.withLock { state in
                    state.handed.append(notification["method"] == "messages.overflow" ? "overflow" : notification["params"] ?? .null)
                    state.unwritten.append(written)
                }
            }
        }

        var handed: [JSONValue] { state.withLock { $0.handed } }

        func writeOne() {
            let first = state.withLock { $0.unwritten.isEmpty ? nil : $0.unwritten.removeFirst() }
            first?()
        }

        func writeAll() {
            let all = state.withLock { state in
                defer { state.unwritten = [] }
                return state.unwritten
            }
            all.forEach { $0() }
        }
    }

    @Test func closeRunsHooksOnceAndRefusesLaterNotifications() {
        let connection = FakeConnection()
        let session = RPCSession(id: 2, notificationQueueLimit: 10, write: connection.write)
        final class Count: @unchecked Sendable { var value = 0 }
        let count = Count()
        session.onClose { count.value += 1 }
        session.finish()
        session.finish()
        #expect(count.value == 1)
        session.onClose { count.value += 10 }
        #expect(count.value == 11)
        #expect(!session.notify(method: "m", params: 1))
        #expect(connection.handed.isEmpty)
    }
}
