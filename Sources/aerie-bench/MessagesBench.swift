import AerieClient
import AerieCore
import AerieCrypto
import AerieServer
import AerieStore
import AerieTesting
import Foundation
import Logging

/// `aerie-bench messages`: `messages.download` of one tenant's 100 pending messages with
/// `tenants` x `perTenant` other messages in the mailbox (seeded in one INSERT ... SELECT), closed
/// loop over `sessions` sessions, before and after an index on (tenant_id, status, received_at,
/// uid); and push latency: from the start of the inbound POST to the `messages.received`
/// notification on a subscribed session.
struct MessagesBench {
    var tenants: Int
    var perTenant: Int
    var sessions: Int
    var seconds: Double

    func run() async throws -> String {
        let server = try await LiveServer.start(server: {
            $0.outbound.allowPrivateURLs = true
            $0.delivery.enabled = false
            $0.database.poolSize = AerieConfiguration().database.poolSize
            // The seeded rows are written in SQL, so in the clear form of before schema/0018 (and
            // under keys no seeded tenant can unwrap): the background sealing leaves them alone,
            // as a database would be after its upgrade finished.
            $0.secrets.sealingSweepInterval = nil
        })
        do {
            let report = try await measure(server)
            try await server.stop()
            return report
        } catch {
            try? await server.stop()
            throw error
        }
    }

    private func measure(_ server: LiveServer) async throws -> String {
        var lines: [String] = []
        let superuser = AerieDatabase(
            configuration: DatabaseConfiguration(conninfo: server.database.superuserConninfo, maxConnections: 1),
            logger: Logger(label: "bench"))
        defer { Task { await superuser.shutdown() } }
        // The bench tenant: one connection, 100 pending messages posted to the inbound endpoint,
        // each timed until its notification arrives on a subscribed session.
        let (client, benchID) = try await server.tenantClient(label: "bench")
        defer { Task { await client.close() } }
        let seedStart = ContinuousClock.now
        let (tenants, perTenant) = (self.tenants, self.perTenant)
        try await superuser.withSession { session in
            // Seeded rows are not news: no NOTIFY for them.
            _ = try session.execute("SET LOCAL session_replication_role = replica")
            _ = try session.execute(
                """
                INSERT INTO aerie.tenants (id, label, token_hash, data_key_wrapped, master_key_fingerprint)
                SELECT gen_random_uuid(), 'seed-' || i, sha256(('seed-' || i)::bytea), b.data_key_wrapped, b.master_key_fingerprint
                FROM generate_series(1, \(tenants)) i, (SELECT * FROM aerie.tenants WHERE id = '\(benchID.rawValue)'::uuid) b
                """)
            _ = try session.execute(
                """
                INSERT INTO aerie.mailbox (tenant_id, uid, recipient_verkey, message_id, type, status, payload, received_at)
                SELECT t.id, gen_random_uuid(), 'seedkey', 'seed-' || n, 'https://didcomm.org/basicmessage/1.0/message',
                    CASE WHEN n % 2 = 0 THEN 'MS-106' ELSE 'MS-103' END,
                    jsonb_build_object('@id', 'seed-' || n, 'content', 'seeded message'), now() - (n || ' seconds')::interval
                FROM aerie.tenants t CROSS JOIN generate_series(1, \(perTenant)) n WHERE t.label LIKE 'seed-%'
                """)
            _ = try session.execute("ANALYZE aerie.mailbox")
        }
        let seedSeconds = Self.seconds(ContinuousClock.now - seedStart)
        lines.append(String(format: "messages: seeded %d tenants x %d messages in %.1f s", tenants, perTenant, seedSeconds))

        let key = try Ed25519KeyPair(seed: Random.bytes(32))
        let invitation: JSONValue = [
            "@type": "https://didcomm.org/connections/1.0/invitation", "@id": .string(UUID().uuidString), "label": "Peer",
            "recipientKeys": .array([.string(key.verkeyBase58)]), "serviceEndpoint": "http://127.0.0.1:9/",
        ]
        let created = try await client.call("connections.createWithInvite", params: ["invitation": invitation])
        let connected = try await client.call("connections.connect", params: ["connectionId": created["connectionId"] ?? .null])
        guard let verkey = connected["pwVerkey"]?.stringValue else { throw BenchError("no pwVerkey") }
        // The bench's peer key, as an accepted Response would record it: since sender
        // authentication (issue 13) only the peer's key may send on a connection.
        try await Self.setPeer(
            key.verkeyBase58, connection: created["connectionId"]?.stringValue ?? "", tenant: benchID, server: server)
        _ = try await client.call("messages.subscribe", params: ["types": "basicMessage"])
        var notifications = client.notifications.makeAsyncIterator()
        var pushLatencies: [Double] = []
        for index in 0..<100 {
            let message: JSONValue = [
                "@type": "https://didcomm.org/basicmessage/1.0/message", "@id": .string("bench-\(index)"), "content": "hello",
            ]
            let envelope = try DIDCommEnvelope.pack(Array(message.jsonString.utf8), to: [verkey], from: key)
            let start = ContinuousClock.now
            let status = try await Self.post(envelope, port: server.didcommPort)
            guard status == 202 else { throw BenchError("inbound POST answered \(status)") }
            while let next = await notifications.next(), next.method != "messages.received" {}
            pushLatencies.append(Self.seconds(ContinuousClock.now - start) * 1e6)
        }
        lines.append(
            String(format: "  push: inbound POST -> messages.received, 100 sequential: p50 %.0f µs, p99 %.0f µs",
                   Self.percentile(pushLatencies, 0.5), Self.percentile(pushLatencies, 0.99)))

        let token = try await benchToken(server, tenant: benchID)
        let without = try await downloadLoad(server, token: token)
        lines.append(String(format: "  messages.download (100 msgs), %d sessions, %.0f s: %.0f req/s, p50 %.0f µs, p99 %.0f µs, bench process CPU %.0f µs/req (no extra index)",
                            sessions, seconds, without.rate, without.p50, without.p99, without.cpuPerRequest))
        // The same load from raw-line sessions that parse nothing (as `rpc` measures): the
        // AerieClient sessions above parse every 100-message answer on the server's cores.
        let auth = #"{"jsonrpc":"2.0","id":0,"method":"session.authenticate","params":{"token":"\#(token)"}}"#
        // The database's CPU beside it: the server's share of the machine is what is left.
        let postmaster = try? await AerieProcess.postmaster(of: server.database)
        let raw = try await RPCBench(sessions: sessions, seconds: seconds, warmup: 1, pacedRatePerSession: 100).measure(
            name: "messages.download", port: server.port, setup: auth, line: #"{"jsonrpc":"2.0","id":1,"method":"messages.download"}"#,
            databaseCPU: { ProcessCPU.postgresSeconds(postmaster: postmaster) })
        lines.append(String(format: "  messages.download (100 msgs), %d raw-line sessions, %.0f s: %.0f req/s, p50 %.0f µs, p99 %.0f µs, bench process CPU %.0f µs/req + PostgreSQL %.0f µs/req (no extra index)",
                            sessions, seconds, raw.rate, raw.p50, raw.p99, raw.cpuPerRequest, raw.databaseCPUPerRequest))
        try await superuser.withSession { session in
            _ = try session.execute(
                "CREATE INDEX bench_mailbox_pending ON aerie.mailbox (tenant_id, status, received_at, uid)")
            _ = try session.execute("ANALYZE aerie.mailbox")
        }
        let with = try await downloadLoad(server, token: token)
        lines.append(String(format: "  messages.download (100 msgs), %d sessions, %.0f s: %.0f req/s, p50 %.0f µs, p99 %.0f µs, bench process CPU %.0f µs/req (index on tenant_id, status, received_at, uid)",
                            sessions, seconds, with.rate, with.p50, with.p99, with.cpuPerRequest))
        return lines.joined(separator: "\n")
    }

    /// The subscriber's token is not returned by `tenantClient`; the load sessions use a rotated
    /// one (the subscriber is done by then).
    private func benchToken(_ server: LiveServer, tenant: TenantID) async throws -> String {
        let admin = try await server.adminClient()
        defer { Task { await admin.close() } }
        let rotated = try await admin.call("admin.tenants.rotateToken", params: ["tenantId": .string(tenant.rawValue)])
        guard let token = rotated["token"]?.stringValue else { throw BenchError("no rotated token: \(rotated)") }
        return token
    }

    /// `cpuPerRequest`: this process's CPU (the server and the AerieClient sessions) per request,
    /// in microseconds: on a shared machine, where the rate follows the CPU the process gets,
    /// this is what a change to the server or the client moves.
    private struct Load { var rate: Double; var p50: Double; var p99: Double; var cpuPerRequest: Double }

    /// User and system CPU seconds of this process so far.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    private func downloadLoad(_ server: LiveServer, token: String) async throws -> Load {
        var clients: [AerieClient] = []
        for _ in 0..<sessions {
            let client = try await server.client()
            try await client.authenticate(token: token)
            let first = try await client.call("messages.download")
            guard case .array(let groups) = first, case .array(let msgs)? = groups.first?["msgs"], msgs.count == 100 else {
                throw BenchError("expected 100 pending messages, got \(first.jsonString.prefix(200))")
            }
            clients.append(client)
        }
        defer { for client in clients { Task { await client.close() } } }
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        let cpuAtStart = Self.processCPUSeconds()
        let start = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for client in clients {
                group.addTask {
                    var own: [Double] = []
                    while ContinuousClock.now < deadline {
                        let t0 = ContinuousClock.now
                        _ = try await client.call("messages.download")
                        own.append(Self.seconds(ContinuousClock.now - t0) * 1e6)
                    }
                    return own
                }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }
        }
        let elapsed = Self.seconds(ContinuousClock.now - start)
        let cpu = Self.processCPUSeconds() - cpuAtStart
        return Load(
            rate: Double(latencies.count) / elapsed, p50: Self.percentile(latencies, 0.5), p99: Self.percentile(latencies, 0.99),
            cpuPerRequest: latencies.isEmpty ? .nan : cpu / Double(latencies.count) * 1e6)
    }

    static func post(_ body: [UInt8], port: Int) async throws -> Int {
        try await LoopbackHTTP.request("POST", port: port, path: "/", body: body, contentType: "application/didcomm-envelope-enc").status
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}

extension MessagesBench {
    /// Records `verkey` as the connection's peer key through the tenant's own (sealing) store,
    /// its data key unwrapped with the live server's master key file.
    static func setPeer(_ verkey: String, connection: String, tenant: TenantID, server: LiveServer) async throws {
        guard let id = UUID(uuidString: connection) else { throw BenchError("no connection id") }
        let master = try MasterKey(base64: String(contentsOf: server.home.appendingPathComponent("master-key"), encoding: .utf8))
        let runtime = server.database.runtime(maxConnections: 1)
        do {
            guard let wrapped = try await runtime.tenants.wrappedDataKey(tenant) else { throw BenchError("no bench tenant") }
            let context = TenantContext(
                tenantID: tenant, database: runtime.tenant(tenant),
                keyring: FixedTenantKeyring(tenantID: tenant, dataKey: try master.unwrap(wrapped, tenantID: tenant.rawValue)),
                logger: Logger(label: "bench"))
            try await context.database.transaction { tx in
                guard var record = try tx.connections.getForUpdate(id) else { throw BenchError("no bench connection") }
                record.theirVerkey = verkey
                _ = try tx.connections.update(record)
            }
        } catch {
            await runtime.shutdown()
            throw error
        }
        await runtime.shutdown()
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
