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
            try receiver.configure(secrets: ["/slow": slowSecret, "/fast": fastSecret], delays: ["/slow": 5])

            // Both backends get events at the same moments, so they come due together: the slow
            // receiver holds one delivery for 5 s at a time while the fast one's keep flowing.
            var written: [String: Double] = [:]
            for _ in 0..<8 {
                _ = try await EventLogTests.newConnection(database, tenant: slow.tenants[0])
                let id = try await EventLogTests.newConnection(database, tenant: fast.tenants[0])
                written[id] = Date().timeIntervalSince1970
                try await Task.sleep(for: .milliseconds(700))
            }
            _ = try await WebhookTests.waitFor(receiver, path: "/fast", events: 8, seconds: 30)
            var lags: [Double] = []
            for request in try receiver.requests() where request.path == "/fast" {
                for event in request.events {
                    guard let id = event["connectionId"]?.stringValue, let at = written[id] else { continue }
                    lags.append(request.received - at)
                }
            }
            #expect(Set(WebhookTests.delivered(try receiver.requests(), path: "/fast").compactMap { $0["connectionId"]?.stringValue })
                == Set(written.keys))
            let worst = lags.max() ?? .infinity
            #expect(worst < 2, "the fast backend's lags: \(lags.sorted())")
            // The slow one was being delivered meanwhile, one batch per 5 s.
            #expect(!WebhookTests.delivered(try receiver.requests(), path: "/slow").isEmpty)
            print("webhook lag of the fast backend beside a 5 s receiver: median \(lags.sorted()[lags.count / 2]) s, max \(worst) s")
        }
    }
}
