import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Logging
import Testing

@testable import AerieServer

/// The delivery service's batches of marks (`OutboxSentMarks`): gathered for a window, then
/// written together; written at once when the service finishes. Two tenants.
@Suite(.timeLimit(.minutes(10))) struct OutboxSentMarksTests {
    /// Active tenants of these labels, with random keys and tokens.
    static func tenants(_ labels: [String], in runtime: AerieDatabase) async throws -> [TenantID] {
        var tenants: [TenantID] = []
        for label in labels {
            let id = TenantID.random()
            tenants.append(
                try await runtime.tenants.create(
                    id: id, label: label, sealer: DataKey.generate().sealer(for: id), tokenHash: Random.bytes(32),
                    wrappedDataKey: Random.bytes(72), masterKeyFingerprint: "test-master", backend: nil
                ).id)
        }
        return tenants
    }

    @Test func marksWaitForTheWindowThenGoTogetherAndFinishWritesTheRestAtOnce() async throws {
        try await TestPostgres.shared.withFreshRuntime(maxConnections: 2) { _, runtime in
            let tenants = try await Self.tenants(["A", "B"], in: runtime)
            let (a, b) = (tenants[0], tenants[1])
            let keyrings = Dictionary(uniqueKeysWithValues: tenants.map { ($0, FixedTenantKeyring(tenantID: $0, dataKey: DataKey.generate())) })
            let connection = UUID.random()
            var rows: [TenantID: [UUID]] = [:]
            for tenant in tenants {
                let items = (0..<4).map { _ in OutboxItem(connectionId: connection, endpoint: "http://peer", envelope: [1]) }
                try await runtime.tenant(tenant).sealing(with: keyrings[tenant]!).transaction { tx in for item in items { try tx.outbox.enqueue(item) } }
                rows[tenant] = items.map(\.id)
            }
            @Sendable func pending(_ tenant: TenantID) async throws -> Set<UUID> {
                Set(try await runtime.tenant(tenant).sealing(with: keyrings[tenant]!).read { try $0.outbox.list(connectionId: connection, limit: 10) }.map(\.id))
            }

            // A window long enough that nothing is written before the checks below.
            let marks = OutboxSentMarks(window: .seconds(3), maxPerWrite: 2)
            let running = Task { await marks.run(database: runtime, logger: Logger(label: "test")) }
            marks.add(rows[a]![0], tenant: a)
            marks.add(rows[b]![0], tenant: b)
            marks.add(rows[a]![1], tenant: a)
            #expect(try await pending(a).count == 4)
            #expect(try await pending(b).count == 4)
            // Then all three go (in two writes of at most two).
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                let (left, right) = (try await pending(a).count, try await pending(b).count)
                if left <= 2 && right <= 3 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(try await pending(a) == Set(rows[a]![2...]))
            #expect(try await pending(b) == Set(rows[b]![1...]))

            // A mark gathered when the service finishes is written then, not a window later.
            let (long, longRunning) = {
                let marks = OutboxSentMarks(window: .seconds(600))
                return (marks, Task { await marks.run(database: runtime, logger: Logger(label: "test")) })
            }()
            long.add(rows[b]![3], tenant: b)
            long.finish()
            marks.finish()
            let finished = ContinuousClock.now
            await longRunning.value
            await running.value
            #expect(ContinuousClock.now - finished < .seconds(60))
            #expect(try await pending(b) == Set(rows[b]![1...2]))
            #expect(try await pending(a) == Set(rows[a]![2...]))
        }
    }
}
