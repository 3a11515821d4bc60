import AerieCore
import Foundation
import Testing

@testable import AerieServer

/// The credential cache's rules without a server: nothing served while the listener is down, a
/// read that raced an invalidation never fills it, entries are per tenant, the size is bounded.
@Suite struct CredentialCacheTests {
    let alice = TenantID(UUID().uuidString.lowercased())!
    let bob = TenantID(UUID().uuidString.lowercased())!
    let hashA: [UInt8] = Array(repeating: 1, count: 32)
    let hashB: [UInt8] = Array(repeating: 2, count: 32)
    let key: [UInt8] = [9, 9, 9]

    func fill(_ cache: CredentialCache, _ tenant: TenantID, _ hash: [UInt8]) {
        guard case .miss(let generation?) = cache.lookup(tenant: tenant, tokenHash: hash) else {
            Issue.record("expected a fillable miss")
            return
        }
        cache.store(tenant: tenant, tokenHash: hash, wrappedDataKey: key, generation: generation)
    }

    @Test func servesNothingUntilTheListenerIsUpAndForgetsEverythingWhenItDrops() {
        let cache = CredentialCache(capacity: 100, maxAge: .seconds(60))
        #expect(cache.lookup(tenant: alice, tokenHash: hashA) == .miss(generation: nil))
        cache.listenerChanged(listening: true)
        fill(cache, alice, hashA)
        #expect(cache.lookup(tenant: alice, tokenHash: hashA) == .hit(wrappedDataKey: key))
        cache.listenerChanged(listening: false)
        #expect(cache.lookup(tenant: alice, tokenHash: hashA) == .miss(generation: nil))
        cache.listenerChanged(listening: true)
        #expect(cache.count == 0)
        if case .hit = cache.lookup(tenant: alice, tokenHash: hashA) { Issue.record("served across an outage") }
    }

    @Test func aReadThatRacedAChangeDoesNotFillTheCache() {
        let cache = CredentialCache(capacity: 100, maxAge: .seconds(60))
        cache.listenerChanged(listening: true)
        guard case .miss(let generation?) = cache.lookup(tenant: alice, tokenHash: hashA) else {
            Issue.record("expected a miss")
            return
        }
        cache.invalidate(tenant: alice)  // the NOTIFY arrived while the database was read
        cache.store(tenant: alice, tokenHash: hashA, wrappedDataKey: key, generation: generation)
        #expect(cache.count == 0)
        // A read across a listener outage neither.
        guard case .miss(let second?) = cache.lookup(tenant: alice, tokenHash: hashA) else { return }
        cache.listenerChanged(listening: false)
        cache.listenerChanged(listening: true)
        cache.store(tenant: alice, tokenHash: hashA, wrappedDataKey: key, generation: second)
        #expect(cache.count == 0)
    }

    @Test func invalidationIsPerTenantAndKeysIncludeTheTenant() {
        let cache = CredentialCache(capacity: 100, maxAge: .seconds(60))
        cache.listenerChanged(listening: true)
        fill(cache, alice, hashA)
        fill(cache, bob, hashB)
        // The same token hash under another tenant is another key.
        if case .hit = cache.lookup(tenant: bob, tokenHash: hashA) { Issue.record("hit across tenants") }
        cache.invalidate(tenant: alice)
        if case .hit = cache.lookup(tenant: alice, tokenHash: hashA) { Issue.record("alice still cached") }
        #expect(cache.lookup(tenant: bob, tokenHash: hashB) == .hit(wrappedDataKey: key))
    }

    @Test func sizeIsBoundedAndEntriesExpire() async throws {
        let cache = CredentialCache(capacity: 10, maxAge: .seconds(60))
        cache.listenerChanged(listening: true)
        for _ in 0..<100 { fill(cache, TenantID(UUID().uuidString.lowercased())!, hashA) }
        #expect(cache.count <= 10)
        let short = CredentialCache(capacity: 10, maxAge: .milliseconds(50))
        short.listenerChanged(listening: true)
        fill(short, alice, hashA)
        try await Task.sleep(for: .milliseconds(80))
        if case .hit = short.lookup(tenant: alice, tokenHash: hashA) { Issue.record("served an expired entry") }
        #expect(CredentialCache(capacity: 0, maxAge: .seconds(60)).lookup(tenant: alice, tokenHash: hashA) == .miss(generation: nil))
    }
}
