import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Synchronization
import Testing

/// `messages.subscribe`: notifications for stored inbound messages and connection state changes,
/// per tenant, filtered, across two server processes on one database.
@Suite(.timeLimit(.minutes(10))) struct MessagesPushTests {
    /// Two tenants, alice and bob, each with a session subscribed to its pushes (no filter) and
    /// a collector of what it is pushed: the set-up of the tests that check a push reaches its
    /// tenant and no other. The caller closes the two sessions.
    static func subscribedPair(_ server: LiveServer) async throws -> (
        alice: AerieClient, bob: AerieClient, aliceSeen: Collector, bobSeen: Collector
    ) {
        let (alice, _) = try await server.tenantClient(label: "alice")
        let (bob, _) = try await server.tenantClient(label: "bob")
        let aliceSeen = Collector(alice)
        let bobSeen = Collector(bob)
        _ = try await alice.call("messages.subscribe")
        _ = try await bob.call("messages.subscribe")
        return (alice, bob, aliceSeen, bobSeen)
    }

    /// Everything a client is pushed, collected in the background.
    final class Collector: Sendable {
        private let task: Task<Void, Never>
        private let box: ReceivedBox

        init(_ client: AerieClient) {
            let box = ReceivedBox()
            task = Task { for await n in client.notifications { box.append(n) } }
            self.box = box
        }

        func all(_ method: String? = nil) -> [AerieClient.ServerNotification] {
            box.items.filter { method == nil || $0.method == method }
        }

        /// Waits until `count` notifications of `method` have arrived (10 s at most).
        @discardableResult
        func wait(for method: String, count: Int = 1) async throws -> [AerieClient.ServerNotification] {
            for _ in 0..<500 {
                let matching = all(method)
                if matching.count >= count { return matching }
                try await Task.sleep(for: .milliseconds(20))
            }
            Issue.record("timed out waiting for \(count) \(method); got \(all().map(\.method))")
            return all(method)
        }

        /// The `index`-th notification of `method` (0-based), once it arrived (10 s at most).
        func notification(_ method: String, at index: Int) async throws -> AerieClient.ServerNotification {
            let matching = try await wait(for: method, count: index + 1)
            return try #require(matching.count > index ? matching[index] : nil, "no \(method) #\(index): \(all().map(\.method))")
        }

        deinit { task.cancel() }
    }

    final class ReceivedBox: Sendable {
        private let state = Mutex<[AerieClient.ServerNotification]>([])
        func append(_ n: AerieClient.ServerNotification) { state.withLock { $0.append(n) } }
        var items: [AerieClient.ServerNotification] { state.withLock { $0 } }
    }

    static let basic = "https://didcomm.org/basicmessage/1.0/message"
    static let question = "https://didcomm.org/questionanswer/1.0/question"

    /// A tenant made through `server`'s admin API, and its token.
    static func tenant(_ server: LiveServer, label: String) async throws -> String {
        let admin = try await server.adminClient()
        defer { Task { await admin.close() } }
        let created = try await admin.call("admin.tenants.create", params: ["label": .string(label)])
        return try #require(created["token"]?.stringValue)
    }

    static func client(_ server: LiveServer, token: String) async throws -> AerieClient {
        let client = try await server.client()
        try await client.authenticate(token: token)
        return client
    }

    @Test func subscribersGetTheirOwnTenantsMessagesThroughTheirFilters() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true; $0.delivery.enabled = false }) { server in
            let (alice, _) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            let c1 = try await MessagesMailboxTests.connect(alice)
            let c2 = try await MessagesMailboxTests.connect(alice)
            let c3 = try await MessagesMailboxTests.connect(bob)
            let aliceSeen = Collector(alice)
            let bobSeen = Collector(bob)
            #expect(try await alice.call("messages.subscribe") == ["subscribed": true])
            #expect(try await bob.call("messages.subscribe", params: ["types": [], "pairwiseDids": ""]) == ["subscribed": true])
            let port = server.didcommPort

            #expect(try await MessagesMailboxTests.send(Self.basic, id: "a1", to: c1, port: port, extra: ["content": "hi"]) == 202)
            let first = try #require(try await aliceSeen.wait(for: "messages.received").first)
            let uid = try #require(try MessagesMailboxTests.uids(try await alice.call("messages.download"))["a1"])
            #expect(first.params == ["pairwiseDID": .string(c1.pwDid), "uid": .string(uid), "type": "basicMessage"])

            #expect(try await MessagesMailboxTests.send(Self.basic, id: "b1", to: c3, port: port, extra: ["content": "hi"]) == 202)
            let bobs = try await bobSeen.wait(for: "messages.received")
            #expect(bobs.map { $0.params["pairwiseDID"] } == [.string(c3.pwDid)])
            // Bob's message never reaches Alice: her next notification is a marker sent after it.
            #expect(try await MessagesMailboxTests.send(Self.basic, id: "a1m", to: c1, port: port, extra: ["content": "marker"]) == 202)
            let marker = try await aliceSeen.notification("messages.received", at: 1)
            let markerUid = try #require(try MessagesMailboxTests.uids(try await alice.call("messages.download"))["a1m"])
            #expect(marker.params == ["pairwiseDID": .string(c1.pwDid), "uid": .string(markerUid), "type": "basicMessage"])

            // Resubscribing replaces the filter: basic messages of c2 only. a4 passes the filter
            // and is sent last: it is the next notification, so a2 and a3 were filtered out.
            _ = try await alice.call("messages.subscribe", params: ["types": ["basicMessage"], "pairwiseDids": [.string(c2.pwDid)]])
            #expect(try await MessagesMailboxTests.send(Self.basic, id: "a2", to: c1, port: port, extra: ["content": "x"]) == 202)
            #expect(try await MessagesMailboxTests.send(Self.question, id: "a3", to: c2, port: port, extra: ["question_text": "?"]) == 202)
            #expect(try await MessagesMailboxTests.send(Self.basic, id: "a4", to: c2, port: port, extra: ["content": "y"]) == 202)
            let filtered = try await aliceSeen.notification("messages.received", at: 2)
            #expect(filtered.params["pairwiseDID"] == .string(c2.pwDid))
            #expect(filtered.params["type"] == "basicMessage")
            // The full @type works as a filter too: a basic message before it is not pushed.
            _ = try await alice.call("messages.subscribe", params: ["types": .string(Self.question)])
            #expect(try await MessagesMailboxTests.send(Self.basic, id: "a5b", to: c1, port: port, extra: ["content": "w"]) == 202)
            #expect(try await MessagesMailboxTests.send(Self.question, id: "a5", to: c1, port: port, extra: ["question_text": "?"]) == 202)
            let question = try await aliceSeen.notification("messages.received", at: 3)
            #expect(question.params["type"] == "question")
            #expect(question.params["pairwiseDID"] == .string(c1.pwDid))

            #expect(try await alice.call("messages.unsubscribe") == ["unsubscribed": true])
            #expect(try await alice.call("messages.unsubscribe") == ["unsubscribed": false])
            #expect(try await MessagesMailboxTests.send(Self.basic, id: "a6", to: c1, port: port, extra: ["content": "z"]) == 202)
            #expect(try await MessagesMailboxTests.send(Self.basic, id: "b2", to: c3, port: port, extra: ["content": "z"]) == 202)
            try await bobSeen.wait(for: "messages.received", count: 2)
            // a6 came while Alice was unsubscribed: subscribed again, her next notification is a7.
            _ = try await alice.call("messages.subscribe")
            #expect(try await MessagesMailboxTests.send(Self.basic, id: "a7", to: c2, port: port, extra: ["content": "after"]) == 202)
            let afterUnsubscribe = try await aliceSeen.notification("messages.received", at: 4)
            let a7 = try #require(try MessagesMailboxTests.uids(try await alice.call("messages.download"))["a7"])
            #expect(afterUnsubscribe.params["uid"] == .string(a7), "a6 was pushed after unsubscribe: \(afterUnsubscribe.params)")
            // Bob never saw anything of Alice's: his two messages, the second sent after Alice's a2-a6.
            #expect(bobSeen.all().allSatisfy { $0.params["pairwiseDID"] == .string(c3.pwDid) })
            #expect(bobSeen.all("messages.received").count == 2)

            // Anonymous sessions cannot subscribe.
            let anonymous = try await server.client()
            defer { Task { await anonymous.close() } }
            await #expect(throws: AerieClientError.self) { try await anonymous.call("messages.subscribe") }
        }
    }

    @Test func eventsReachASubscriberOnAnotherServerProcess() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true; $0.delivery.enabled = false }) { first in
            let second = try await first.sibling()
            do {
                let aliceToken = try await Self.tenant(first, label: "alice")
                let bobToken = try await Self.tenant(first, label: "bob")
                let aliceOnFirst = try await Self.client(first, token: aliceToken)
                let aliceOnSecond = try await Self.client(second, token: aliceToken)
                let bobOnSecond = try await Self.client(second, token: bobToken)
                defer { Task { await aliceOnFirst.close(); await aliceOnSecond.close(); await bobOnSecond.close() } }
                let aliceSeen = Collector(aliceOnSecond)
                let bobSeen = Collector(bobOnSecond)
                _ = try await aliceOnSecond.call("messages.subscribe")
                _ = try await bobOnSecond.call("messages.subscribe")

                // A state change made on the first process...
                let connection = try await MessagesMailboxTests.connect(aliceOnFirst)
                let changes = try await aliceSeen.wait(for: "connections.stateChanged", count: 3)
                #expect(changes.map { $0.params["state"] } == [1, 2, 4])
                #expect(changes.last?.params == ["connectionId": .string(connection.id), "state": 4, "stateName": "accepted"])
                // ...and a message posted to the first process's endpoint.
                #expect(try await MessagesMailboxTests.send(Self.basic, id: "m1", to: connection, port: first.didcommPort,
                                                          extra: ["content": "hi"]) == 202)
                let received = try await aliceSeen.wait(for: "messages.received")
                #expect(received.first?.params["pairwiseDID"] == .string(connection.pwDid))
                // None of that reached Bob: his first notification is one of his own, made after.
                let bobsOwn = try await MessagesMailboxTests.connect(bobOnSecond)
                let bobFirst = try #require(try await bobSeen.wait(for: "connections.stateChanged").first)
                #expect(bobSeen.all().first?.method == "connections.stateChanged", "\(bobSeen.all().map(\.params))")
                #expect(bobFirst.params["connectionId"] == .string(bobsOwn.id), "\(bobSeen.all().map(\.params))")
            } catch {
                try? await second.stop()
                throw error
            }
            try await second.stop()
        }
    }

    @Test func aSessionThatReauthenticatesAsAnotherTenantGetsNothingOfTheFirst() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true; $0.delivery.enabled = false }) { server in
            let aliceToken = try await Self.tenant(server, label: "alice")
            let bobToken = try await Self.tenant(server, label: "bob")
            let alice = try await Self.client(server, token: aliceToken)
            let switcher = try await Self.client(server, token: aliceToken)
            defer { Task { await alice.close(); await switcher.close() } }
            let connection = try await MessagesMailboxTests.connect(alice)
            let seen = Collector(switcher)
            _ = try await switcher.call("messages.subscribe")
            try await switcher.authenticate(token: bobToken)
            #expect(try await MessagesMailboxTests.send(Self.basic, id: "s1", to: connection, port: server.didcommPort,
                                                      extra: ["content": "hi"]) == 202)
            // A marker on a second subscriber of Alice's shows the event went out.
            let marker = Collector(alice)
            _ = try await alice.call("messages.subscribe")
            #expect(try await MessagesMailboxTests.send(Self.basic, id: "s2", to: connection, port: server.didcommPort,
                                                      extra: ["content": "hi"]) == 202)
            try await marker.wait(for: "messages.received")
            // Subscribed as Bob now, the switched session gets Bob's own event, made after both of
            // Alice's messages: once it is there, neither of them came before it. (Alice's
            // connection's own state changes may have reached it while it was still Alice.)
            _ = try await switcher.call("messages.subscribe")
            let bob = try await Self.client(server, token: bobToken)
            defer { Task { await bob.close() } }
            let bobsOwn = try await MessagesMailboxTests.connect(bob)
            var bobsEventArrived = false
            for _ in 0..<500 where !bobsEventArrived {
                bobsEventArrived = seen.all("connections.stateChanged").contains { $0.params["connectionId"] == .string(bobsOwn.id) }
                if !bobsEventArrived { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(bobsEventArrived, "Bob's own event never reached the switched session: \(seen.all().map(\.params))")
            #expect(seen.all("messages.received").isEmpty, "\(seen.all().map(\.params))")
        }
    }
}
