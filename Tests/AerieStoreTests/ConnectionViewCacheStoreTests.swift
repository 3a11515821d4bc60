import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Logging
import Testing

/// `TenantDatabase.connectionView` with the cache on, on a real PostgreSQL, always with two
/// tenants. No server here: the test plays the listener (`listenerChanged`), and a second pool
/// without a cache plays another server writing to the same database. That process's writes
/// reach this cache only by NOTIFY, which nobody relays here: so what it changes shows whether
/// an answer came from the cache.
@Suite(.timeLimit(.minutes(10))) struct ConnectionViewCacheStoreTests {
    static func cached(_ fixture: StoreFixture, capacity: Int = 100) -> AerieDatabase {
        var configuration = DatabaseConfiguration(conninfo: fixture.database.runtimeConninfo, maxConnections: 2)
        configuration.connectionViewCacheSize = capacity
        return AerieDatabase(configuration: configuration, logger: Logger(label: "test"), stores: TestDatabase.allPluginStores)
    }

    static func relabel(_ database: any TenantDatabase, _ id: UUID, _ label: String) async throws {
        try await database.transaction { tx in
            guard var record = try tx.connections.get(id) else { throw AerieError.notFound("no connection") }
            record.label = label
            _ = try tx.connections.update(record)
        }
    }

    @Test func isolatedPerTenantAndOwnWritesShowAtOnce() async throws {
        try await StoreFixture.with { fixture in
            let server = Self.cached(fixture)
            let (aliceID, bobID) = (try await fixture.createTenant("alice").id, try await fixture.createTenant("bob").id)
            let alice = server.sealed(aliceID)
            let bob = server.sealed(bobID)
            // One connection id in both tenants (the key is (tenant, id)), and one of alice's only.
            let shared = ConnectionRecord(invitation: [:], invitationKind: "aries", label: "alice's")
            let bobsCopy = {
                var copy = shared
                copy.label = "bob's"
                return copy
            }()
            let onlyAlice = ConnectionRecord(invitation: [:], invitationKind: "aries", label: "alice only")
            try await alice.transaction { tx in
                try tx.connections.insert(shared)
                try tx.connections.insert(onlyAlice)
            }
            try await bob.transaction { try $0.connections.insert(bobsCopy) }
            server.connectionViews.listenerChanged(listening: true)

            for _ in 0..<2 {  // the second round from the cache
                #expect(try await alice.connectionView(shared.id)?.label == "alice's")
                #expect(try await bob.connectionView(shared.id)?.label == "bob's")
                #expect(try await alice.connectionView(onlyAlice.id)?.label == "alice only")
                #expect(try await bob.connectionView(onlyAlice.id) == nil)
            }
            #expect(server.connectionViews.count == 3)

            // This process's own writes leave the cache when they commit: no NOTIFY needed.
            try await Self.relabel(alice, shared.id, "renamed")
            #expect(try await alice.connectionView(shared.id)?.label == "renamed")
            #expect(try await bob.connectionView(shared.id)?.label == "bob's")
            _ = try await alice.transaction { try $0.connections.delete(onlyAlice.id) }
            #expect(try await alice.connectionView(onlyAlice.id) == nil)
            await server.shutdown()
        }
    }

    @Test func anotherProcessesWriteNeedsTheNotifyAndAListenerOutageDropsEverything() async throws {
        try await StoreFixture.with { fixture in
            let server = Self.cached(fixture)
            let (aliceID, bobID) = (try await fixture.createTenant("alice").id, try await fixture.createTenant("bob").id)
            let alice = server.sealed(aliceID)
            let aliceElsewhere = fixture.runtime.sealed(aliceID)
            let record = ConnectionRecord(invitation: [:], invitationKind: "aries", label: "first")
            try await alice.transaction { try $0.connections.insert(record) }
            let bobRecord = ConnectionRecord(invitation: [:], invitationKind: "aries", label: "bob")
            try await server.sealed(bobID).transaction { try $0.connections.insert(bobRecord) }

            // Listener down (the start): nothing is cached, every read goes to the database.
            #expect(try await alice.connectionView(record.id)?.label == "first")
            #expect(server.connectionViews.count == 0)
            try await Self.relabel(aliceElsewhere, record.id, "second")
            #expect(try await alice.connectionView(record.id)?.label == "second")

            // Listener up: cached; the other process's change is not seen until its NOTIFY...
            server.connectionViews.listenerChanged(listening: true)
            #expect(try await alice.connectionView(record.id)?.label == "second")
            #expect(try await server.sealed(bobID).connectionView(bobRecord.id)?.label == "bob")
            try await Self.relabel(aliceElsewhere, record.id, "third")
            #expect(try await alice.connectionView(record.id)?.label == "second")
            // ...which names the connection (as EventHub relays schema/0028's event).
            server.connectionViews.invalidate(tenant: aliceID, keys: [record.id])
            #expect(try await alice.connectionView(record.id)?.label == "third")

            // An outage clears everything (its events are lost) and bypasses the cache.
            try await Self.relabel(aliceElsewhere, record.id, "fourth")
            server.connectionViews.listenerChanged(listening: false)
            #expect(server.connectionViews.count == 0)
            #expect(try await alice.connectionView(record.id)?.label == "fourth")
            #expect(server.connectionViews.count == 0)
            await server.shutdown()
        }
    }

    @Test func theCacheHoldsAtMostItsCapacity() async throws {
        try await StoreFixture.with { fixture in
            let server = Self.cached(fixture, capacity: 4)
            let alice = server.sealed(try await fixture.createTenant("alice").id)
            let records = (0..<20).map { ConnectionRecord(invitation: [:], invitationKind: "aries", label: "c\($0)") }
            try await alice.transaction { tx in for record in records { try tx.connections.insert(record) } }
            server.connectionViews.listenerChanged(listening: true)
            for record in records { #expect(try await alice.connectionView(record.id)?.label == record.label) }
            #expect(server.connectionViews.count <= 4)
            // Each entry is bounded too: a view with more text than that is read every time.
            server.connectionViews.listenerChanged(listening: true)
            let large = ConnectionRecord(invitation: [:], invitationKind: "aries", label: String(repeating: "x", count: 5000))
            try await alice.transaction { try $0.connections.insert(large) }
            for _ in 0..<2 { #expect(try await alice.connectionView(large.id)?.label == large.label) }
            #expect(server.connectionViews.count == 0)
            // Off: nothing held.
            var off = DatabaseConfiguration(conninfo: fixture.database.runtimeConninfo, maxConnections: 1)
            off.connectionViewCacheSize = 0
            let uncached = AerieDatabase(configuration: off, logger: Logger(label: "test"), stores: TestDatabase.allPluginStores)
            uncached.connectionViews.listenerChanged(listening: true)
            #expect(try await uncached.sealed(alice.tenantID).connectionView(records[0].id)?.label == "c0")
            #expect(uncached.connectionViews.count == 0)
            await uncached.shutdown()
            await server.shutdown()
        }
    }
}

extension JSONText {
    /// The `label` of a connection view's text.
    fileprivate var label: String? { (try? value)?["label"]?.stringValue }
}
