import AerieCore
import AerieServer
import AerieStore
import AerieTesting
import ConnectionsPlugin
import Foundation
import Logging
import Synchronization
import Testing

/// `connections.accept` says `existing` only of a connection an earlier call made. Its one-round-
/// trip transaction may run twice after it committed (the answer lost with its database
/// connection, which the pool retries once on a fresh one); the second run's match check then
/// finds the record the first run stored, and that is still this call's new connection.
@Suite(.timeLimit(.minutes(5))) struct AcceptExistingFlagTests {
    /// What `ConnectionPool` does when a one-round-trip transaction's connection dies after the
    /// Sync reached PostgreSQL: the body committed, the answer is lost, the body runs again.
    /// Everything else goes to the real database unchanged.
    struct AnswerLostDatabase: TenantDatabase {
        /// How many transactions still lose their answer; shared with the sealed copy.
        final class Reruns: Sendable {
            let left: Mutex<Int>
            init(_ count: Int) { left = Mutex(count) }
        }

        let base: any TenantDatabase
        let reruns: Reruns

        init(_ base: any TenantDatabase, reruns: Reruns = Reruns(1)) {
            self.base = base
            self.reruns = reruns
        }

        var tenantID: TenantID { base.tenantID }

        func transaction<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
            try await base.transaction(body)
        }

        func rerunnableTransaction<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
            let lose = reruns.left.withLock { left in
                defer { left = max(0, left - 1) }
                return left > 0
            }
            if lose { _ = try await base.rerunnableTransaction(body) }
            return try await base.rerunnableTransaction(body)
        }

        func read<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
            try await base.read(body)
        }

        func sealing(with keyring: any TenantKeyring) -> any TenantDatabase {
            AnswerLostDatabase(base.sealing(with: keyring), reruns: reruns)
        }

        func connectionView(_ id: UUID) async throws -> JSONText? { try await base.connectionView(id) }
    }

    /// Every endpoint passes the address policy; nothing is fetched.
    struct AnyDestination: URLFetcher {
        func fetch(_ request: URLFetchRequest) async throws -> FetchedURL {
            throw URLFetchError(.unreachable, "these tests fetch nothing")
        }
        func checkDestination(_ url: String) async throws {}
    }

    static func service() -> ConnectionService {
        ConnectionService(endpoint: { "http://127.0.0.1:9/" }, destinations: AnyDestination(), sender: ConnectionSendService())
    }

    static func connections(_ tenant: TenantContext) async throws -> [ConnectionRecord] {
        try await tenant.database.read { try $0.connections.list(after: nil, state: nil, limit: 100) }
    }

    @Test func aNewConnectionWhoseCommitAnswerWasLostIsNotExisting() async throws {
        try await WalletFixture.with { fixture in
            let plain = try await fixture.createTenant("invitee")
            let tenant = TenantContext(
                tenantID: plain.tenantID, database: AnswerLostDatabase(fixture.runtime.tenant(plain.tenantID)),
                keyring: plain.keyring, logger: Logger(label: "test"))
            let invitation = try InvitationParser.parse(try DIDCommEndpointTests.deadInvitation())
            let service = Self.service()

            let (made, existing) = try await service.accept(invitation, label: nil, returnRoute: false, wait: nil, tenant: tenant)
            #expect(!existing, "the connection this call created is not an existing one")
            #expect(made.state == .requested)
            #expect(try await Self.connections(plain).map(\.id) == [made.id])

            // A later call for the same invitation is answered the same connection, as existing.
            let (again, existingAgain) = try await service.accept(invitation, label: nil, returnRoute: false, wait: nil, tenant: plain)
            #expect(existingAgain)
            #expect(again.id == made.id)
            #expect(try await Self.connections(plain).count == 1)
        }
    }

    @Test func twoConcurrentAcceptsMakeOneConnectionAndOneOfThemIsExisting() async throws {
        try await WalletFixture.with { fixture in
            let alice = try await fixture.createTenant("alice")
            let bob = try await fixture.createTenant("bob")
            let service = Self.service()
            for _ in 0..<5 {
                let invitation = try InvitationParser.parse(try DIDCommEndpointTests.deadInvitation())
                async let first = service.accept(invitation, label: nil, returnRoute: false, wait: nil, tenant: alice)
                async let second = service.accept(invitation, label: nil, returnRoute: false, wait: nil, tenant: alice)
                // Another tenant's accept of the same invitation is its own, never existing.
                async let other = service.accept(invitation, label: nil, returnRoute: false, wait: nil, tenant: bob)
                let answers = try await [first, second]
                let theirs = try await other
                #expect(Set(answers.map(\.record.id)).count == 1, "one connection for one invitation")
                #expect(answers.filter { !$0.existing }.count == 1, "\(answers.map(\.existing))")
                #expect(!theirs.existing)
                #expect(theirs.record.id != answers[0].record.id)
            }
            #expect(try await Self.connections(alice).count == 5)
            #expect(try await Self.connections(bob).count == 5)
        }
    }
}
