import AerieClient
import AerieCore
import AerieServer
import AerieStore
import AerieTesting
import Foundation
import Logging

/// `aerie-bench export`: a tenant archive of one tenant holding `messages` mailbox rows (seeded by
/// SQL, as the messages bench does), streamed through `admin.tenants.export` and counted, not
/// kept: MB/s of archive and the process's peak RSS (server and client are this process) before
/// and after, to show memory stays flat however many rows; then the same archive imported into a
/// second server (MB/s). The rows are seeded clear and sealed by the source's sealing sweep
/// before the export, so the import opens and seals every one anew, as a real tenant's.
struct ExportBench {
    var messages: Int

    func run() async throws -> String {
        let configure: (inout AerieConfiguration) -> Void = {
            $0.delivery.enabled = false
            $0.secrets.sealingSweepInterval = nil
            // The importing side's mailbox quota (100,000 by default) would refuse the archive.
            $0.database.quotas.mailboxMessages = 0
            $0.database.quotas.mailboxBytes = 0
        }
        let source = try await LiveServer.start(server: {
            configure(&$0)
            $0.secrets.sealingSweepInterval = .seconds(1)
        })
        let destination = try await LiveServer.start(server: configure)
        do {
            let report = try await measure(source, destination)
            try await source.stop()
            try await destination.stop()
            return report
        } catch {
            try? await source.stop()
            try? await destination.stop()
            throw error
        }
    }

    private func measure(_ source: LiveServer, _ destination: LiveServer) async throws -> String {
        var lines: [String] = []
        let (client, tenant) = try await source.tenantClient(label: "bench")
        await client.close()
        let superuser = AerieDatabase(
            configuration: DatabaseConfiguration(conninfo: source.database.superuserConninfo, maxConnections: 1),
            logger: Logger(label: "bench"))
        let seedStart = ContinuousClock.now
        let messages = self.messages
        try await superuser.withSession { session in
            _ = try session.execute("SET LOCAL session_replication_role = replica")
            _ = try session.execute(
                """
                INSERT INTO aerie.mailbox (tenant_id, uid, recipient_verkey, message_id, type, status, payload, received_at)
                SELECT '\(tenant.rawValue)'::uuid, gen_random_uuid(), 'seedkey', 'seed-' || n,
                    'https://didcomm.org/basicmessage/1.0/message', CASE WHEN n % 2 = 0 THEN 'MS-106' ELSE 'MS-103' END,
                    jsonb_build_object('@id', 'seed-' || n, 'content', repeat('seeded message ', 20)),
                    now() - (n || ' seconds')::interval
                FROM generate_series(1, \(messages)) n
                """)
        }
        Self.report(&lines, String(format: "export: seeded %d messages in %.1f s", messages, MessagesBench.seconds(ContinuousClock.now - seedStart)))
        let sealStart = ContinuousClock.now
        while try await superuser.withSession({ try $0.query("SELECT count(*) FROM aerie.mailbox WHERE sealed IS NULL").int(0, 0) ?? 0 }) > 0 {
            try await Task.sleep(for: .seconds(1))
        }
        await superuser.shutdown()
        Self.report(&lines, String(format: "export: sealed them in %.1f s", MessagesBench.seconds(ContinuousClock.now - sealStart)))

        let admin = try await source.adminClient()
        let before = Self.peakRSS()
        let passphrase = "bench passphrase, long enough"
        let start = ContinuousClock.now
        var bytes = 0
        // The archive goes to a file (read back by the import below), so the peak measures the
        // export, not a copy of the archive.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-bench-\(UUID().uuidString).aerie")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil, attributes: [.posixPermissions: 0o600])
        defer { try? FileManager.default.removeItem(at: file) }
        let out = try FileHandle(forWritingTo: file)
        try await admin.exportTenant(tenant, sealing: ["passphrase": .string(passphrase)]) { piece in
            bytes += piece.count
            try out.write(contentsOf: piece)
        }
        try out.close()
        let exportSeconds = MessagesBench.seconds(ContinuousClock.now - start)
        let after = Self.peakRSS()
        await admin.close()
        Self.report(
            &lines,
            String(
                format: "export: %d messages, %.1f MB archive in %.2f s = %.1f MB/s (Argon2id included); peak RSS %.0f MB before, %.0f MB after",
                messages, Double(bytes) / 1e6, exportSeconds, Double(bytes) / 1e6 / exportSeconds,
                Double(before) / 1e6, Double(after) / 1e6))
        let destinationAdmin = try await destination.adminClient()
        let importStart = ContinuousClock.now
        let input = try FileHandle(forReadingFrom: file)
        defer { try? input.close() }
        let imported = try await destinationAdmin.importTenant(opening: ["passphrase": .string(passphrase)]) {
            let data = try input.read(upToCount: 256 << 10) ?? Data()
            return data.isEmpty ? nil : Array(data)
        }
        let importSeconds = MessagesBench.seconds(ContinuousClock.now - importStart)
        await destinationAdmin.close()
        Self.report(
            &lines,
            String(
                format: "import: %@ rows in %.2f s = %.1f MB/s", imported["rows"]?["mailbox"]?.text ?? "?", importSeconds,
                Double(bytes) / 1e6 / importSeconds))
        return lines.joined(separator: "\n")
    }

    /// Prints `line` at once (a later failure keeps what was measured) and keeps it for the summary.
    static func report(_ lines: inout [String], _ line: String) {
        print(line)
        lines.append(line)
    }

    /// VmHWM of this process, in bytes.
    static func peakRSS() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
}

extension JSONValue {
    fileprivate var text: String {
        if case .int(let n) = self { return String(n) }
        return stringValue ?? "?"
    }
}
