import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Testing

/// Issue 42: `kill -9` of either server during a move (the fault points `import.beforeCommit` on
/// the destination and `move.beforeRetire` on the source) leaves the tenant whole on one side,
/// and running the move again finishes it with the tenant on exactly one side.
@Suite(.serialized, .timeLimit(.minutes(15))) struct TenantMoveCrashTests {
    static func admin(_ server: ServerProcess) async throws -> AerieClient {
        let client = try await server.client()
        try await client.authenticate(token: try server.adminToken)
        return client
    }

    static func status(_ server: ServerProcess, _ tenant: String) async throws -> String? {
        let admin = try await admin(server)
        defer { Task { await admin.close() } }
        do {
            return try await admin.call("admin.tenants.get", params: ["tenantId": .string(tenant)])["status"]?.stringValue
        } catch let error as AerieClientError where error.stableCode == "not_found" {
            return nil
        }
    }

    static func profile(_ server: ServerProcess, token: String) async throws -> JSONValue? {
        let client = try await server.tenantClient(token: token)
        defer { Task { await client.close() } }
        return try await client.call("settings.get", params: ["key": "profile"])["value"]
    }

    @Test func aKillOfEitherSideLeavesTheTenantWholeOnOneSideAndTheMoveResumes() async throws {
        let source = try ServerProcess(database: try await TestPostgres.shared.freshDatabase())
        let destination = try ServerProcess(database: try await TestPostgres.shared.freshDatabase())
        do {
            try await source.start()
            try await destination.start()
            let value: JSONValue = ["name": "Alice Secret Name"]
            var tenants: [(id: String, token: String)] = []
            for label in ["alice", "carol"] {
                let tenant = try await source.createTenant(label: label)
                let client = try await source.tenantClient(token: tenant.token)
                _ = try await client.call("settings.set", params: ["key": "profile", "value": value])
                await client.close()
                tenants.append(tenant)
            }
            let (alice, carol) = (tenants[0], tenants[1])

            // The destination dies just before the import commits: Alice stays whole on the
            // source (frozen, `moving`), the destination holds nothing of her.
            await destination.stop()
            try await destination.start(extra: ["AERIE_FAULT_POINT": "import.beforeCommit"])
            do {
                let (from, to) = (try await Self.admin(source), try await Self.admin(destination))
                await #expect(throws: (any Error).self) { try await from.moveTenant(TenantID(alice.id)!, to: to) }
                await from.close()
                await to.close()
            }
            #expect(await destination.waitForExit(timeout: .seconds(30)), "the fault point did not end the destination")
            try await destination.start()
            #expect(try await Self.status(destination, alice.id) == nil)
            #expect(try await Self.status(source, alice.id) == "moving")
            await #expect(throws: AerieClientError.self) { try await Self.profile(source, token: alice.token) }
            // Run again: the move finishes.
            do {
                let (from, to) = (try await Self.admin(source), try await Self.admin(destination))
                _ = try await from.moveTenant(TenantID(alice.id)!, to: to)
                await from.close()
                await to.close()
            }
            #expect(try await Self.status(source, alice.id) == nil)
            #expect(try await Self.profile(destination, token: alice.token) == value)

            // The source dies after the destination committed, before it shredded Carol: she is
            // whole and active on the destination, frozen on the source; run again: retired.
            await source.stop()
            try await source.start(extra: ["AERIE_FAULT_POINT": "move.beforeRetire"])
            do {
                let (from, to) = (try await Self.admin(source), try await Self.admin(destination))
                await #expect(throws: (any Error).self) { try await from.moveTenant(TenantID(carol.id)!, to: to) }
                await from.close()
                await to.close()
            }
            #expect(await source.waitForExit(timeout: .seconds(30)), "the fault point did not end the source")
            try await source.start()
            #expect(try await Self.profile(destination, token: carol.token) == value)
            #expect(try await Self.status(source, carol.id) == "moving")
            do {
                let (from, to) = (try await Self.admin(source), try await Self.admin(destination))
                let retired = try await from.moveTenant(TenantID(carol.id)!, to: to)
                #expect(retired["retired"] == true)
                await from.close()
                await to.close()
            }
            #expect(try await Self.status(source, carol.id) == nil)
            #expect(try await Self.profile(destination, token: carol.token) == value)
        } catch {
            Issue.record("\(error)\nsource log:\n\(source.log().suffix(3000))\ndestination log:\n\(destination.log().suffix(3000))")
        }
        await source.cleanUp()
        await destination.cleanUp()
        try? await source.database?.drop()
        try? await destination.database?.drop()
    }
}
