import AerieCore
import Foundation
import Testing

/// The rules of the credential and connection caches without a server: nothing served while the
/// listener is down, a read that raced an invalidation never fills it, entries are per tenant,
/// the size is bounded. (`ConnectionViewCacheTests` in AerieStoreTests and AerieServerTests
/// show them on a real PostgreSQL.)
@Suite(.timeLimit(.minutes(5))) struct TenantCacheTests {
    let alice = TenantID(UUID().uuidString.lowercased())!
    let bob = TenantID(UUID().uuidString.lowercased())!
    let hashA: [UInt8] = Array(repeating: 1, count: 32)
    let hashB: [UInt8] = Array(repeating: 2, count: 32)
    let key: [UInt8] = [9, 9, 9]

    func fill(_ cache: CredentialCache, _ tenant: TenantID, _ hash: [UInt8]) {
        guard case .miss(let generation?) = cache.lookup(tenant: tenant, key: hash) else {
            Issue.record("expected a fillable miss")
            return
        }
        cache.store(tenant: tenant, key: hash, value: key, generation: generation)
    }

    @Test func servesNothingUntilTheListenerIsUpAndForgetsEverythingWhenItDrops() {
        let cache = CredentialCache(capacity: 100, maxAge: .seconds(60))
        #expect(cache.lookup(tenant: alice, key: hashA) == .miss(generation: nil))
        cache.listenerChanged(listening: true)
        fill(cache, alice, hashA)
        #expect(cache.lookup(tenant: alice, key: hashA) == .hit(key))
        cache.listenerChanged(listening: false)
        #expect(cache.lookup(tenant: alice, key: hashA) == .miss(generation: nil))
        cache.listenerChanged(listening: true)
        #expect(cache.count == 0)
        if case .hit = cache.lookup(tenant: alice, key: hashA) { Issue.record("served across an outage") }
    }

    @Test func aReadThatRacedAChangeDoesNotFillTheCache() {
        let cache = CredentialCache(capacity: 100, maxAge: .seconds(60))
        cache.listenerChanged(listening: true)
        guard case .miss(let generation?) = cache.lookup(tenant: alice, key: hashA) else {
            Issue.record("expected a miss")
            return
        }
        cache.invalidate(tenant: alice)  // the NOTIFY arrived while the database was read
        cache.store(tenant: alice, key: hashA, value: key, generation: generation)
        #expect(cache.count == 0)
        // A read across a listener outage neither.
        guard case .miss(let second?) = cache.lookup(tenant: alice, key: hashA) else { return }
        cache.listenerChanged(listening: false)
        cache.listenerChanged(listening: true)
        cache.store(tenant: alice, key: hashA, value: key, generation: second)
        #expect(cache.count == 0)
    }

    @Test func invalidationIsPerTenantAndKeysIncludeTheTenant() {
        let cache = CredentialCache(capacity: 100, maxAge: .seconds(60))
        cache.listenerChanged(listening: true)
        fill(cache, alice, hashA)
        fill(cache, bob, hashB)
        // The same token hash under another tenant is another key.
        if case .hit = cache.lookup(tenant: bob, key: hashA) { Issue.record("hit across tenants") }
        cache.invalidate(tenant: alice)
        if case .hit = cache.lookup(tenant: alice, key: hashA) { Issue.record("alice still cached") }
        #expect(cache.lookup(tenant: bob, key: hashB) == .hit(key))
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
        if case .hit = short.lookup(tenant: alice, key: hashA) { Issue.record("served an expired entry") }
        #expect(CredentialCache(capacity: 0, maxAge: .seconds(60)).lookup(tenant: alice, key: hashA) == .miss(generation: nil))
    }

    func view(_ id: UUID, label: String) -> JSONText {
        ConnectionView(ConnectionRecord(id: id, invitation: [:], invitationKind: "aries", label: label)).text
    }

    @Test func aConnectionKeyIsInvalidatedAloneAndARacingReadCannotPutItBack() {
        let cache = ConnectionViewCache(capacity: 100, maxAge: .seconds(60))
        cache.listenerChanged(listening: true)
        let (one, two) = (UUID(), UUID())
        for (tenant, id) in [(alice, one), (alice, two), (bob, one)] {
            guard case .miss(let generation?) = cache.lookup(tenant: tenant, key: id) else {
                Issue.record("expected a fillable miss")
                return
            }
            cache.store(tenant: tenant, key: id, value: view(id, label: "\(tenant)"), generation: generation)
        }
        // The same connection id under bob is bob's own entry.
        #expect(cache.lookup(tenant: bob, key: one) == .hit(view(one, label: "\(bob)")))
        #expect(cache.lookup(tenant: alice, key: one) == .hit(view(one, label: "\(alice)")))
        // A read of alice's `one` starts, the row changes (its NOTIFY or this process's write),
        // then the read's stale answer arrives.
        cache.invalidate(tenant: alice, keys: [one])
        guard case .miss(let generation?) = cache.lookup(tenant: alice, key: one) else {
            Issue.record("expected a miss after the invalidation")
            return
        }
        cache.invalidate(tenant: alice, keys: [one])
        cache.store(tenant: alice, key: one, value: view(one, label: "stale"), generation: generation)
        if case .hit = cache.lookup(tenant: alice, key: one) { Issue.record("a racing read filled the cache") }
        // Only the named key went: alice's other connection and bob's same id stay.
        #expect(cache.lookup(tenant: alice, key: two) == .hit(view(two, label: "\(alice)")))
        #expect(cache.lookup(tenant: bob, key: one) == .hit(view(one, label: "\(bob)")))
        #expect(cache.count == 2)
        cache.invalidate(tenant: alice)
        #expect(cache.count == 1)
    }
}
