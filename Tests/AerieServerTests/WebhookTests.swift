import AerieClient
import AerieCore
import AerieCrypto
import AerieServer
import AerieStore
import AerieTesting
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 14 item 4: backend webhooks. A real HTTP receiver (Python's http.server on loopback, an
/// implementation independent of Aerie's) checks each POST's `Aerie-Signature` with the secret
/// `admin.backends.setWebhook` showed once, and records what it got.
@Suite(.timeLimit(.minutes(10))) struct WebhookTests {
    /// Settings every webhook test server uses: loopback receivers over http, quick retries.
    static func configure(_ configuration: inout AerieConfiguration) {
        configuration.webhooks.allowHTTP = true
        configuration.webhooks.batchSize = 10
        configuration.webhooks.backoff = .milliseconds(200)
        configuration.webhooks.maxBackoff = .seconds(1)
    }

    static func setWebhook(_ admin: AerieClient, backend: String, url: String) async throws -> String {
        let answer = try await admin.call("admin.backends.setWebhook", params: ["backendId": .string(backend), "url": .string(url)])
        #expect(answer["url"] == .string(url))
        let secret = try #require(answer["secret"]?.stringValue)
        #expect(secret.hasPrefix("whsec_"))
        return secret
    }

    /// The events the receiver accepted (2xx), in arrival order, with duplicates (a batch sent
    /// again) removed by position, as a receiver should.
    static func delivered(_ requests: [WebhookReceiver.Request], path: String) -> [JSONValue] {
        var seen = Set<Int64>()
        var events: [JSONValue] = []
        for request in requests where request.path == path && request.status == 200 {
            for event in request.events {
                guard case .int(let position)? = event["position"], seen.insert(position).inserted else { continue }
                events.append(event)
            }
        }
        return events
    }

    static func waitFor(_ receiver: WebhookReceiver, path: String, events count: Int, seconds: Int = 60) async throws -> [JSONValue] {
        for _ in 0..<(seconds * 20) {
            if delivered(try receiver.requests(), path: path).count >= count { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        try await Task.sleep(for: .milliseconds(300))
        return delivered(try receiver.requests(), path: path)
    }

    @Test func signedBatchesArriveInOrderAndFailuresAreRetriedFromTheLog() async throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        try await LiveServer.with(server: Self.configure) { server in
            let database = server.database.runtime()
            defer { Task { await database.shutdown() } }
            let admin = try await server.adminClient()
            defer { Task { await admin.close() } }
            let backend = try await EventLogTests.backend(server, "hooked", tenants: 2)
            defer { Task { await backend.session.close() } }
            // Before the webhook, and numbered: not sent (the cursor starts at the newest position).
            try await EventLogTests.newConnection(database, tenant: backend.tenants[0])
            for _ in 0..<500 where try await database.events.head() < 1 { try await Task.sleep(for: .milliseconds(20)) }
            let secret = try await Self.setWebhook(admin, backend: backend.id, url: receiver.url("/a"))
            try receiver.configure(secrets: ["/a": secret])

            var written: [String] = []
            for n in 0..<25 { written.append(try await EventLogTests.newConnection(database, tenant: backend.tenants[n % 2])) }
            var events = try await Self.waitFor(receiver, path: "/a", events: 25)
            #expect(EventLogTests.connectionIds(events) == written)
            #expect(EventLogTests.isStrictlyIncreasing(EventLogTests.positions(events)))
            #expect(events.allSatisfy { event in backend.tenants.contains { event["tenantId"] == .string($0.rawValue) } })
            var requests = try receiver.requests()
            #expect(requests.allSatisfy { $0.verified }, "every POST carries a valid signature")
            #expect(requests.allSatisfy { $0.events.count <= 10 }, "batches are bounded")
            #expect(requests.contains { $0.events.count > 1 }, "events are batched")
            for request in requests {
                #expect(request.body["fromPosition"] == request.events.first?["position"])
                #expect(request.body["toPosition"] == request.events.last?["position"])
                #expect(request.body["backendId"] == .string(backend.id))
            }

            // The receiver fails: the same events are sent again, with backoff, until it answers 2xx.
            try receiver.configure(secrets: ["/a": secret], failing: true)
            for n in 0..<5 { written.append(try await EventLogTests.newConnection(database, tenant: backend.tenants[n % 2])) }
            for _ in 0..<400 where try receiver.requests().filter({ $0.status == 500 }).count < 2 {
                try await Task.sleep(for: .milliseconds(50))
            }
            let refused = try receiver.requests().filter { $0.status == 500 }
            #expect(refused.count >= 2)
            #expect(Set(refused.map { $0.body["fromPosition"] }).count == 1, "a refused batch is sent again from the same position")
            let status = try await admin.call("admin.backends.getWebhook", params: ["backendId": .string(backend.id)])
            #expect(status["lastError"]?.stringValue?.contains("500") == true)
            #expect((status["attempts"]?.intValue ?? 0) >= 1)
            try receiver.configure(secrets: ["/a": secret], failing: false)
            events = try await Self.waitFor(receiver, path: "/a", events: 30)
            #expect(EventLogTests.connectionIds(events) == written)

            // The receiver is down (nothing listens on its port): retried until it is back.
            receiver.stop()
            for n in 0..<5 { written.append(try await EventLogTests.newConnection(database, tenant: backend.tenants[n % 2])) }
            for _ in 0..<400 {
                let state = try await admin.call("admin.backends.getWebhook", params: ["backendId": .string(backend.id)])
                if state["lastError"]?.stringValue?.contains("reached") == true { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            let down = try await admin.call("admin.backends.getWebhook", params: ["backendId": .string(backend.id)])
            #expect(down["lastError"]?.stringValue?.contains("could not be reached") == true, "\(down)")
            try receiver.restart()
            events = try await Self.waitFor(receiver, path: "/a", events: 35)
            #expect(EventLogTests.connectionIds(events) == written)
            requests = try receiver.requests()
            #expect(requests.allSatisfy { $0.verified })
            let done = try await admin.call("admin.backends.getWebhook", params: ["backendId": .string(backend.id)])
            #expect(done["position"] == events.last?["position"])
            #expect(done["attempts"] == .int(0))
            #expect((done["lastError"] ?? .null) == .null)
            // Times are ISO 8601 (UTC), as everywhere else, not seconds since 2001.
            for key in ["nextAttemptAt", "deliveredAt"] {
                let text = try #require(done[key]?.stringValue, "\(key): \(done)")
                #expect(text.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/) != nil, "\(key): \(text)")
                let year = Calendar(identifier: .gregorian).component(.year, from: try Date(text, strategy: .iso8601))
                #expect(abs(year - Calendar(identifier: .gregorian).component(.year, from: Date())) <= 1)
            }
        }
    }

    /// A receiver that verifies signatures as a backend should (HMAC over "<t>." + body, `t`
    /// within its window) answers 401 to a batch it cannot verify: the server sends the same batch
    /// again from the same position until the receiver holds the right secret, after a wrong one and
    /// after `admin.backends.setWebhook` rotated it. A captured request replayed once the receiver's
    /// window has passed is refused.
    @Test func aReceiverRefusesBadOrStaleSignaturesAndTheBatchIsSentAgain() async throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        try await LiveServer.with(server: Self.configure) { server in
            let database = server.database.runtime()
            defer { Task { await database.shutdown() } }
            let admin = try await server.adminClient()
            defer { Task { await admin.close() } }
            let backend = try await EventLogTests.backend(server, "verifying", tenants: 2)
            defer { Task { await backend.session.close() } }
            let secret = try await Self.setWebhook(admin, backend: backend.id, url: receiver.url("/v"))

            /// Waits (bounded) until the receiver refused `count` POSTs after the first `skip` requests.
            func refusals(after skip: Int, count: Int) async throws -> [WebhookReceiver.Request] {
                for _ in 0..<1200 where try receiver.requests().dropFirst(skip).filter({ $0.status == 401 }).count < count {
                    try await Task.sleep(for: .milliseconds(50))
                }
                return try receiver.requests().dropFirst(skip).filter { $0.status == 401 }
            }

            // The receiver holds a wrong secret: every POST is refused and sent again from the same position.
            try receiver.configure(secrets: ["/v": secret + "x"], rejectUnverified: true)
            var written: [String] = []
            for n in 0..<5 { written.append(try await EventLogTests.newConnection(database, tenant: backend.tenants[n % 2])) }
            var refused = try await refusals(after: 0, count: 3)
            #expect(refused.count >= 3)
            #expect(refused.allSatisfy { !$0.signed && $0.fresh }, "refused for the signature, not the time")
            #expect(Set(refused.map { $0.body["fromPosition"] }).count == 1, "a refused batch is sent again from the same position")
            let state = try await admin.call("admin.backends.getWebhook", params: ["backendId": .string(backend.id)])
            #expect(state["lastError"]?.stringValue?.contains("401") == true, "\(state)")
            #expect(Self.delivered(try receiver.requests(), path: "/v").isEmpty)

            // The right secret: the same events arrive, nothing skipped.
            try receiver.configure(secrets: ["/v": secret], rejectUnverified: true)
            var events = try await Self.waitFor(receiver, path: "/v", events: 5)
            #expect(EventLogTests.connectionIds(events) == written)
            #expect(events.first?["position"] == refused.first?.body["fromPosition"], "delivery starts where it was refused")
            #expect(try receiver.requests().filter { $0.status == 200 }.allSatisfy { $0.verified })

            // The secret rotates; the receiver still holds the old one: refused until it has the new one.
            let rotated = try await Self.setWebhook(admin, backend: backend.id, url: receiver.url("/v"))
            #expect(rotated != secret)
            let before = try receiver.requests().count
            for n in 0..<4 { written.append(try await EventLogTests.newConnection(database, tenant: backend.tenants[n % 2])) }
            refused = try await refusals(after: before, count: 2)
            #expect(refused.count >= 2)
            #expect(refused.allSatisfy { !$0.signed })
            #expect(Set(refused.map { $0.body["fromPosition"] }).count == 1)
            try receiver.configure(secrets: ["/v": rotated], rejectUnverified: true)
            events = try await Self.waitFor(receiver, path: "/v", events: 9)
            #expect(EventLogTests.connectionIds(events) == written)
            #expect(events.dropFirst(5).first?["position"] == refused.first?.body["fromPosition"])
            var accepted: [WebhookReceiver.Request] = []
            for request in try receiver.requests() where request.status == 200 { accepted.append(request) }
            #expect(accepted.count >= 2 && accepted.allSatisfy { $0.verified }, "\(accepted.map { ($0.status, $0.verified) })")

            // A captured request replayed: within the window it verifies (the signature alone cannot
            // tell a replay); once the receiver's clock is past the window it is refused as stale.
            let captured = try #require(accepted.last)
            #expect(try await receiver.replay(captured) == 200)
            try receiver.configure(secrets: ["/v": rotated], rejectUnverified: true, window: 300, clockOffset: 301)
            #expect(try await receiver.replay(captured) == 401)
            let replayed = try #require(try receiver.requests().last)
            #expect(replayed.signed && !replayed.fresh && replayed.status == 401)
        }
    }

    /// Servers restart (gracefully, and one is killed with `kill -9`) while events keep coming,
    /// and a second server runs over the same database: every event is delivered, in order;
    /// after removing repeats by position nothing is missing.
    @Test func deliveryResumesAfterRestartsAndTwoServersDoNotInterleave() async throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        var server = try await LiveServer.start(server: Self.configure)
        do {
            let database = server.database.runtime()
            let admin = try await server.adminClient()
            let backend = try await EventLogTests.backend(server, "restarts", tenants: 3)
            await backend.session.close()
            let secret = try await Self.setWebhook(admin, backend: backend.id, url: receiver.url("/r"))
            await admin.close()
            try receiver.configure(secrets: ["/r": secret])
            var written: [String] = []
            for n in 0..<30 { written.append(try await EventLogTests.newConnection(database, tenant: backend.tenants[n % 3])) }
            server = try await server.restarted(Self.configure)
            for n in 0..<30 { written.append(try await EventLogTests.newConnection(database, tenant: backend.tenants[n % 3])) }
            // A second server on the same database: the lease keeps one of them delivering at a time.
            let sibling = try await server.sibling { $0.instance = "sibling" }
            for n in 0..<60 { written.append(try await EventLogTests.newConnection(database, tenant: backend.tenants[n % 3])) }
            let events = try await Self.waitFor(receiver, path: "/r", events: written.count)
            #expect(EventLogTests.connectionIds(events) == written)
            // One server at a time delivers: batches follow each other; only a batch cut off by the
            // graceful restart (after the receiver's 2xx, before the cursor moved) may come again.
            let accepted = try receiver.requests().filter { $0.status == 200 }
            var regressions = 0
            var last: Int64 = 0
            for request in accepted {
                guard case .int(let from)? = request.body["fromPosition"], case .int(let to)? = request.body["toPosition"] else { continue }
                if from <= last { regressions += 1 }
                last = max(last, to)
            }
            #expect(regressions <= 1, "batches out of order or twice: \(accepted.map { $0.body["fromPosition"] ?? .null })")
            try await sibling.stop()
            await database.shutdown()
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    @Test func aServerProcessKilledMidStreamLosesNothing() async throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        let environment = [
            "AERIE_WEBHOOK_ALLOW_HTTP": "1", "AERIE_WEBHOOK_BACKOFF_MS": "200", "AERIE_WEBHOOK_BATCH_SIZE": "5",
            "AERIE_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        ]
        try await ServerProcess.onFreshDatabase(environment: environment) { server, runtime in
            try await server.start()
            let admin = try await server.client()
            try await admin.authenticate(token: try server.adminToken)
            let created = try await admin.call("admin.backends.create", params: ["label": "killed"])
            let backendID = try #require(created["backendId"]?.stringValue)
            let session = try await server.tenantClient(token: try #require(created["token"]?.stringValue))
            let tenant = try #require(
                TenantID(try await session.call("admin.tenants.create", params: ["label": "t"])["tenantId"]?.stringValue ?? ""))
            await session.close()
            let secret = try await Self.setWebhook(admin, backend: backendID, url: receiver.url("/k"))
            await admin.close()
            try receiver.configure(secrets: ["/k": secret])
            let total = 300
            let writer = Task {
                var ids: [String] = []
                while ids.count < total { ids.append(try await EventLogTests.newConnection(runtime, tenant: tenant)) }
                return ids
            }
            for _ in 0..<1500 where Self.delivered(try receiver.requests(), path: "/k").count < 30 {
                try await Task.sleep(for: .milliseconds(20))
            }
            await server.kill9()
            try await Task.sleep(for: .milliseconds(300))
            try await server.start()
            let written = try await writer.value
            let events = try await Self.waitFor(receiver, path: "/k", events: total)
            #expect(EventLogTests.connectionIds(events) == written)
            #expect(try receiver.requests().allSatisfy { $0.verified })
        }
    }

    @Test func twoBackendsEachGetOnlyTheirOwnEventsSignedWithTheirOwnSecret() async throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        try await LiveServer.with(server: Self.configure) { server in
            let database = server.database.runtime()
            defer { Task { await database.shutdown() } }
            let admin = try await server.adminClient()
            defer { Task { await admin.close() } }
            let alpha = try await EventLogTests.backend(server, "alpha", tenants: 1)
            let beta = try await EventLogTests.backend(server, "beta", tenants: 1)
            defer { Task { await alpha.session.close(); await beta.session.close() } }
            let alphaSecret = try await Self.setWebhook(admin, backend: alpha.id, url: receiver.url("/alpha"))
            let betaSecret = try await Self.setWebhook(admin, backend: beta.id, url: receiver.url("/beta"))
            #expect(alphaSecret != betaSecret)
            try receiver.configure(secrets: ["/alpha": alphaSecret, "/beta": betaSecret])
            var alphaIds: [String] = []
            var betaIds: [String] = []
            for _ in 0..<8 {
                alphaIds.append(try await EventLogTests.newConnection(database, tenant: alpha.tenants[0]))
                betaIds.append(try await EventLogTests.newConnection(database, tenant: beta.tenants[0]))
            }
            let alphaEvents = try await Self.waitFor(receiver, path: "/alpha", events: 8)
            let betaEvents = try await Self.waitFor(receiver, path: "/beta", events: 8)
            #expect(EventLogTests.connectionIds(alphaEvents) == alphaIds)
            #expect(EventLogTests.connectionIds(betaEvents) == betaIds)
            #expect(alphaEvents.allSatisfy { $0["tenantId"] == .string(alpha.tenants[0].rawValue) })
            #expect(betaEvents.allSatisfy { $0["tenantId"] == .string(beta.tenants[0].rawValue) })
            // Each path checks its own backend's secret: a POST signed with the other's would fail.
            #expect(try receiver.requests().allSatisfy { $0.verified })

            // The secret is stored wrapped, never in clear.
            let raw = try #require(Base64URL.decode(String(alphaSecret.dropFirst("whsec_".count))))
            let stored = try await database.pool.read { session in
                try session.query("SELECT secret_wrapped FROM aerie.backend_webhooks WHERE backend_id = $1::uuid", [.text(alpha.id)])
                    .bytes(0, 0)
            }
            let wrapped = try #require(stored)
            #expect(!Self.contains(wrapped, raw) && !Self.contains(wrapped, Array(alphaSecret.utf8)))

            // Cleared: nothing more is sent to alpha's receiver; beta's goes on.
            let cleared = try await admin.call("admin.backends.clearWebhook", params: ["backendId": .string(alpha.id)])
            #expect(cleared["cleared"] == true)
            try await EventLogTests.newConnection(database, tenant: alpha.tenants[0])
            betaIds.append(try await EventLogTests.newConnection(database, tenant: beta.tenants[0]))
            #expect(EventLogTests.connectionIds(try await Self.waitFor(receiver, path: "/beta", events: 9)) == betaIds)
            #expect(Self.delivered(try receiver.requests(), path: "/alpha").count == 8)
            // Only the admin sets webhooks.
            #expect(
                await BackendSessionTests.code {
                    try await alpha.session.call(
                        "admin.backends.setWebhook", params: ["backendId": .string(alpha.id), "url": "https://93.184.215.14/"])
                }.code == "forbidden")
        }
    }

    /// `keys rotate-master` rewraps webhook secrets with the tenants' data keys: delivery goes on
    /// with the same secret (the receiver's) after the old key is gone.
    @Test func aMasterKeyRotationKeepsWebhooksSigning() async throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        try await LiveServer.with(server: Self.configure) { server in
            let database = server.database.runtime()
            defer { Task { await database.shutdown() } }
            let admin = try await server.adminClient()
            defer { Task { await admin.close() } }
            let backend = try await EventLogTests.backend(server, "rotated", tenants: 1)
            defer { Task { await backend.session.close() } }
            let secret = try await Self.setWebhook(admin, backend: backend.id, url: receiver.url("/m"))
            try receiver.configure(secrets: ["/m": secret])
            var written = [try await EventLogTests.newConnection(database, tenant: backend.tenants[0])]
            _ = try await Self.waitFor(receiver, path: "/m", events: 1)

            let configuration = AerieConfiguration(
                home: server.home, databaseURL: server.database.runtimeConninfo, ownerDatabaseURL: server.database.ownerConninfo)
            let rotation = try await AerieApplication.rotateMasterKey(configuration: configuration, logger: MasterKeyRotationTests.logger)
            let stored = try await database.pool.read { session in
                try session.query("SELECT secret_wrapped FROM aerie.backend_webhooks WHERE backend_id = $1::uuid", [.text(backend.id)])
                    .bytes(0, 0)
            }
            #expect(MasterKey.fingerprint(ofWrapped: try #require(stored)) == rotation.newFingerprint)

            written.append(try await EventLogTests.newConnection(database, tenant: backend.tenants[0]))
            let events = try await Self.waitFor(receiver, path: "/m", events: 2)
            #expect(EventLogTests.connectionIds(events) == written)
            #expect(try receiver.requests().allSatisfy { $0.verified })
        }
    }

    /// Over HTTPS to a real TLS receiver (Python's `ssl`) whose certificate a private CA signed:
    /// delivered once the server trusts that CA (`AERIE_TLS_CA_FILE`). Refusal without it is
    /// `OutboundTLSTests`'.
    @Test func webhooksOverHTTPSReachAReceiverTheConfiguredCAVouchesFor() async throws {
        let receiver = try await LoopbackTLSServer.start()
        do {
            try await LiveServer.with(server: {
                Self.configure(&$0)
                $0.webhooks.allowHTTP = false
                $0.outbound.tlsCAFile = receiver.caFile
            }) { server in
                let database = server.database.runtime()
                defer { Task { await database.shutdown() } }
                let admin = try await server.adminClient()
                defer { Task { await admin.close() } }
                let backend = try await EventLogTests.backend(server, "tls", tenants: 1)
                defer { Task { await backend.session.close() } }
                _ = try await Self.setWebhook(admin, backend: backend.id, url: receiver.url + "hook")
                _ = try await EventLogTests.newConnection(database, tenant: backend.tenants[0])
                for _ in 0..<3000 where receiver.posts == 0 { try await Task.sleep(for: .milliseconds(20)) }
                #expect(receiver.posts >= 1, "no batch reached the HTTPS receiver")
            }
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    @Test func urlsOutsideTheAddressPolicyOrNotHTTPSAreRefused() async throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        // The address policy of production: no private networks allowed.
        try await LiveServer.with(server: { $0.outbound.webhookAllowedNetworks = [] }) { server in
            let admin = try await server.adminClient()
            defer { Task { await admin.close() } }
            let backend = try await BackendSessionTests.createBackend(admin, "refused")
            let cases: [(String, String)] = [
                ("https://127.0.0.1:\(receiver.port)/a", "address"),
                ("https://10.1.2.3/hook", "address"),
                ("https://[::1]/hook", "address"),
                ("https://169.254.169.254/latest/meta-data", "address"),
                ("http://example.com/hook", "https"),
                ("ftp://example.com/hook", "https"),
                ("not a url", "https"),
                ("https://example.com/" + String(repeating: "a", count: 3000), "longer"),
            ]
            for (url, reason) in cases {
                do {
                    _ = try await admin.call("admin.backends.setWebhook", params: ["backendId": .string(backend.id), "url": .string(url)])
                    Issue.record("\(url) was accepted")
                } catch let error as AerieClientError {
                    #expect(error.code == -32602, "\(url): \(error)")
                    #expect(error.field == "url", "\(url): \(error)")
                    #expect(error.message.contains(reason), "\(url): \(error.message)")
                }
            }
            #expect(
                await BackendSessionTests.code {
                    try await admin.call("admin.backends.getWebhook", params: ["backendId": .string(backend.id)])
                }.code == "not_found")
            // A public dotted IPv4 address passes the policy without a lookup or a connection
            // (a host name would be resolved and probed: no test reaches past loopback).
            #expect(
                await BackendSessionTests.code {
                    try await admin.call(
                        "admin.backends.setWebhook",
                        params: ["backendId": .string(UUID().uuidString.lowercased()), "url": "https://93.184.215.14/hook"])
                }.code == "not_found")
        }
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}

enum Base64URL {
    static func decode(_ text: String) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }
}

/// A webhook receiver in Python (http.server on 127.0.0.1): verifies `Aerie-Signature` with the
/// secret configured for the request's path (HMAC-SHA256 over "<t>." + body, t within 5
/// minutes), answers 500 while told to fail, waits the seconds configured for a path before
/// answering (a slow receiver), and appends every POST to a JSON-lines log with the time it
/// arrived.
final class WebhookReceiver: @unchecked Sendable {
    struct Request {
        var path: String
        var verified: Bool
        /// The HMAC matched, whatever the timestamp's age.
        var signed: Bool
        /// The timestamp was within the receiver's window.
        var fresh: Bool
        var status: Int
        /// The `Aerie-Signature` header and the body's exact bytes, to replay the request.
        var signature: String
        var raw: [UInt8]
        var body: JSONValue
        /// When the POST arrived (seconds since 1970, the receiver's clock: this machine's).
        var received: Double
        var events: [JSONValue] { if case .array(let items)? = body["events"] { items } else { [] } }
    }

    static let script = #"""
        import base64, hashlib, hmac, json, os, sys, threading, time
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        directory, port = sys.argv[1], int(sys.argv[2])
        lock = threading.Lock()
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                received = time.time()
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with open(os.path.join(directory, "control.json")) as f:
                    control = json.load(f)
                fields = dict(p.split("=", 1) for p in self.headers.get("Aerie-Signature", "").split(",") if "=" in p)
                secret = control["secrets"].get(self.path)
                signed = fresh = False
                if secret is not None and fields.get("t", "").isdigit():
                    expected = hmac.new(secret.encode(), fields["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
                    signed = hmac.compare_digest(expected, fields.get("v1", ""))
                    now = time.time() + control.get("clockOffset", 0)
                    fresh = abs(now - int(fields["t"])) < control.get("window", 300)
                verified = signed and fresh
                status = 500 if control.get("failing") else 200
                if control.get("rejectUnverified") and not verified:
                    status = 401
                record = {"path": self.path, "verified": verified, "signed": signed, "fresh": fresh, "status": status,
                          "signature": self.headers.get("Aerie-Signature"), "raw": base64.b64encode(body).decode(),
                          "contentType": self.headers.get("Content-Type"), "body": json.loads(body), "received": received}
                with lock:
                    with open(os.path.join(directory, "log.jsonl"), "a") as f:
                        f.write(json.dumps(record) + "\n")
                time.sleep(control.get("delays", {}).get(self.path, 0))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
            def log_message(self, *args):
                pass
        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    let directory: URL
    private(set) var port: Int = 0
    private var process: Process?

    private init(directory: URL) { self.directory = directory }

    static func start() throws -> WebhookReceiver {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-webhooks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(script.utf8).write(to: directory.appendingPathComponent("receiver.py"))
        try Data("".utf8).write(to: directory.appendingPathComponent("log.jsonl"))
        let receiver = WebhookReceiver(directory: directory)
        try receiver.configure(secrets: [:])
        try receiver.launch(port: 0)
        return receiver
    }

    private func launch(port: Int) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", directory.appendingPathComponent("receiver.py").path, directory.path, String(port)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line: [UInt8] = []
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            guard let first = byte.first else { break }
            if first == UInt8(ascii: "\n") { break }
            line.append(first)
        }
        guard let bound = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            struct NotStarted: Error {}
            throw NotStarted()
        }
        self.port = bound
        self.process = process
    }

    /// Starts the receiver again on the same port (after `stop`).
    func restart() throws { try launch(port: port) }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// `delays`: seconds the receiver waits before answering a POST to a path.
    /// `rejectUnverified`: answer 401 to a POST whose signature does not verify or is older than
    /// `window` seconds, as a backend should; `clockOffset` moves the receiver's clock forward.
    func configure(
        secrets: [String: String], failing: Bool = false, delays: [String: Double] = [:], rejectUnverified: Bool = false,
        window: Int = 300, clockOffset: Int = 0
    ) throws {
        let control = JSONValue.object([
            "secrets": .object(secrets.mapValues(JSONValue.string)), "failing": .bool(failing),
            "delays": .object(delays.mapValues(JSONValue.double)), "rejectUnverified": .bool(rejectUnverified),
            "window": .int(Int64(window)), "clockOffset": .int(Int64(clockOffset)),
        ])
        let temporary = directory.appendingPathComponent("control.tmp")
        try Data(control.serialized()).write(to: temporary)
        // rename(2): the receiver reads the old file or the new one, never half of one.
        guard rename(temporary.path, directory.appendingPathComponent("control.json").path) == 0 else {
            struct RenameFailed: Error {}
            throw RenameFailed()
        }
    }

    func requests() throws -> [Request] {
        let text = try String(contentsOf: directory.appendingPathComponent("log.jsonl"), encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            guard let value = try? JSONValue(parsing: Array(line.utf8)) else { return nil }
            return Request(
                path: value["path"]?.stringValue ?? "", verified: value["verified"] == true, signed: value["signed"] == true,
                fresh: value["fresh"] == true, status: Int(value["status"]?.intValue ?? 0),
                signature: value["signature"]?.stringValue ?? "",
                raw: Data(base64Encoded: value["raw"]?.stringValue ?? "").map(Array.init) ?? [],
                body: value["body"] ?? .null, received: Self.seconds(value["received"]))
        }
    }

    private static func seconds(_ value: JSONValue?) -> Double {
        switch value {
        case .double(let seconds)?: seconds
        case .int(let seconds)?: Double(seconds)
        default: 0
        }
    }

    /// POSTs a captured request again, byte for byte with its signature header; returns the status.
    func replay(_ request: Request) async throws -> Int {
        var post = URLRequest(url: try #require(URL(string: url(request.path))), timeoutInterval: 10)
        post.httpMethod = "POST"
        post.setValue("application/json", forHTTPHeaderField: "Content-Type")
        post.setValue(request.signature, forHTTPHeaderField: "Aerie-Signature")
        post.httpBody = Data(request.raw)
        let (_, response) = try await URLSession.shared.data(for: post)
        return try #require(response as? HTTPURLResponse).statusCode
    }

    /// SIGKILL: a child of the test process may have SIGTERM blocked.
    func stop() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}
