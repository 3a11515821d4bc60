import AerieCore
import Foundation
import Logging
import Synchronization
import Testing

@testable import AerieTransport

/// Destination checks on separate, bounded lanes (`URLResolver.checkStrangerDestination`): a
/// name server that never answers strangers' names (a lookup stub that blocks) delays only
/// strangers' checks; the tenants' own checks go on at once; a full strangers' lane refuses at
/// once with `busy`; and a check waits at most its deadline, however long its lookup blocks.
@Suite(.timeLimit(.minutes(2))) struct URLResolverLaneTests {
    /// Blocks lookups of `*.blackhole.test` until `release` (or 20 s); counts the lookups run.
    final class BlackholeDNS: Sendable {
        let released = Atomic<Bool>(false)
        let lookups = Atomic<Int>(0)

        func lookup(_ url: String) {
            lookups.add(1, ordering: .relaxed)
            guard url.contains(".blackhole.test") else { return }
            let until = ContinuousClock.now + .seconds(20)
            while !released.load(ordering: .relaxed), ContinuousClock.now < until { usleep(10_000) }
        }

        func release() { released.store(true, ordering: .relaxed) }
    }

    final class Outcomes: Sendable {
        let list = Mutex<[(Duration, URLFetchError.Code?)]>([])
    }

    func resolver(_ dns: BlackholeDNS) -> URLResolver {
        URLResolver(
            configuration: .init(connectTimeout: .seconds(3), threads: 2, strangerCheckThreads: 2, maxPendingStrangerChecks: 8),
            policy: AddressPolicy(allowPrivateAddresses: false), logger: Logger(label: "test.lanes"),
            lookup: { dns.lookup($0) })
    }

    @Test func aBlackholedNameServerDelaysOnlyStrangersAndAFullLaneRefusesAtOnce() async throws {
        let dns = BlackholeDNS()
        let resolver = resolver(dns)
        defer { dns.release() }
        // Forty strangers' Requests name endpoints whose names never resolve.
        let outcomes = Outcomes()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<40 {
                group.addTask {
                    let started = ContinuousClock.now
                    var code: URLFetchError.Code?
                    do { try await resolver.checkStrangerDestination("http://s\(n).blackhole.test/") } catch let error as URLFetchError {
                        code = error.code
                    }
                    let elapsed = ContinuousClock.now - started
                    outcomes.list.withLock { $0.append((elapsed, code)) }
                }
            }
            // Meanwhile a tenant connects to its peer: its check does not wait behind them.
            try await Task.sleep(for: .milliseconds(100))
            let started = ContinuousClock.now
            try await resolver.checkDestination("http://peer.example.org/")
            let elapsed = ContinuousClock.now - started
            // Well before the strangers' 3 s deadline, which a check queued behind them would wait for
            // (a bound with room for a loaded host: this is not a timing benchmark).
            #expect(elapsed < .milliseconds(1500), "the tenant's check took \(elapsed)")
            try await group.waitForAll()
        }
        let all = outcomes.list.withLock { $0 }
        let refused = all.filter { $0.1 == .busy }
        let waited = all.filter { $0.1 == nil }
        // Eight were taken (the lane's bound), the other 32 refused at once.
        #expect(waited.count == 8, "\(all)")
        #expect(refused.count == 32, "\(all)")
        #expect(refused.allSatisfy { $0.0 < .milliseconds(1500) }, "\(refused.map(\.0))")
        // Those taken waited their deadline (3 s) and no more, though their lookups still block.
        #expect(waited.allSatisfy { $0.0 < .milliseconds(4500) }, "\(waited.map(\.0))")
        // Two threads ran lookups; the six queued behind them were dropped at their deadline unrun.
        #expect(dns.lookups.load(ordering: .relaxed) == 3, "\(dns.lookups.load(ordering: .relaxed)) lookups")
        dns.release()
        await resolver.shutdown()
    }

    @Test func theLaneIsFreeAgainOnceItsLookupsEnd() async throws {
        let dns = BlackholeDNS()
        let resolver = resolver(dns)
        await withTaskGroup(of: Void.self) { group in
            for n in 0..<8 { group.addTask { try? await resolver.checkStrangerDestination("http://s\(n).blackhole.test/") } }
        }
        await #expect(throws: URLFetchError.self) { try await resolver.checkStrangerDestination("http://more.blackhole.test/") }
        dns.release()
        try await Task.sleep(for: .milliseconds(200))
        try await resolver.checkStrangerDestination("http://peer.example.org/")
        // The address policy still judges what strangers name.
        await #expect(throws: URLFetchError.self) { try await resolver.checkStrangerDestination("http://127.0.0.1:9/") }
        await resolver.shutdown()
    }
}
