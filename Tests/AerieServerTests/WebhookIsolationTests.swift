import AerieClient
import AerieCore
import AerieServer
import AerieTesting
import Foundation
import Testing

/// Each backend's webhook is delivered on its own: a receiver that takes seconds to answer
/// delays only its own backend's events, never another backend's.
@Suite(.timeLimit(.minutes(10))) struct WebhookIsolationTests {
    @Test func aSlowReceiverDelaysOnlyItsOwnBackend() async throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        try await LiveServer.with(server: {
            WebhookTests.configure(&$0)
            $0.webhooks.batchSize = 1
            $0.webhooks.timeout = .seconds(30)
        }) { server in
            let database = server.database.runtime()
            defer { Task { await database.shutdown() } }
            let admin = try await server.adminClient()
            defer { Task { await admin.close() } }
            let slow = try await EventLogTests.backend(server, "slow", tenants: 1)
            let fast = try await EventLogTests.backend(server, "fast", tenants: 1)
            defer { Task { await slow.session.close(); await fast.session.close() } }
            let slowSecret = try await WebhookTests.setWebhook(admin, backend: slow.id, url: receiver.url("/slow"))
            let fastSecret = try await WebhookTests.setWebhook(admin, backend: fast.id, url: receiver.url("/fast"))
            // The slow receiver holds each delivery for 20 s before answering.
            try receiver.configure(secrets: ["/slow": slowSecret, "/fast": fastSecret], delays: ["/slow": 20])

            // Both backends get events at the same moments, so they come due together.
            var written: [String: Double] = [:]
            for _ in 0..<8 {
                _ = try await EventLogTests.newConnection(database, tenant: slow.tenants[0])
                let id = try await EventLogTests.newConnection(database, tenant: fast.tenants[0])
                written[id] = Date().timeIntervalSince1970
                try await Task.sleep(for: .milliseconds(700))
            }
            _ = try await WebhookTests.waitFor(receiver, path: "/fast", events: 8, seconds: 30)
            let requests = try receiver.requests()
            #expect(Set(WebhookTests.delivered(requests, path: "/fast").compactMap { $0["connectionId"]?.stringValue })
                == Set(written.keys))
            // Isolation as an order of events, not a time bound: the slow receiver took its first
            // delivery before the fast backend's last one and had not answered it by the time all
            // eight fast ones were in (it would have been sent its second event then, batches of one).
            let slowRequests = requests.filter { $0.path == "/slow" }
            let lastFast = requests.filter { $0.path == "/fast" }.map(\.received).max() ?? 0
            #expect(slowRequests.count == 1, "the slow receiver's requests: \(slowRequests.map(\.received))")
            #expect((slowRequests.first?.received ?? .infinity) < lastFast)
            var lags: [Double] = []
            for request in requests where request.path == "/fast" {
                for event in request.events {
                    guard let id = event["connectionId"]?.stringValue, let at = written[id] else { continue }
                    lags.append(request.received - at)
                }
            }
            let worst = lags.max() ?? .infinity
            print("webhook lag of the fast backend beside a receiver holding each delivery 20 s: median \(lags.sorted()[lags.count / 2]) s, max \(worst) s")
        }
    }
}
