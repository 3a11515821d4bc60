import AerieCore
import Testing

@testable import AerieRPC

/// The per-session notification queue: bounded, one overflow notice, resumes once drained.
@Suite(.timeLimit(.minutes(10))) struct SessionQueueTests {
    @Test func fullQueueSendsOneOverflowNoticeAndResumesWhenDrained() async throws {
        let session = RPCSession(id: 1, notificationQueueLimit: 2)
        #expect(session.notify(method: "m", params: 1))
        #expect(session.notify(method: "m", params: 2))
        #expect(!session.notify(method: "m", params: 3))
        #expect(!session.notify(method: "m", params: 4))
        var iterator = session.notifications.makeAsyncIterator()
        var seen: [JSONValue] = []
        for _ in 0..<3 {
            let next = try #require(await iterator.next())
            seen.append(next["method"] == "messages.overflow" ? "overflow" : next["params"] ?? .null)
            session.didSend()
        }
        #expect(seen == [1, 2, "overflow"])
        #expect(session.notify(method: "m", params: 5))
        #expect(await iterator.next()?["params"] == 5)
    }

    @Test func closeRunsHooksOnceAndRefusesLaterNotifications() {
        let session = RPCSession(id: 2, notificationQueueLimit: 10)
        final class Count: @unchecked Sendable { var value = 0 }
        let count = Count()
        session.onClose { count.value += 1 }
        session.finish()
        session.finish()
        #expect(count.value == 1)
        session.onClose { count.value += 10 }
        #expect(count.value == 11)
        #expect(!session.notify(method: "m", params: 1))
    }
}
