import AerieClient
import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Logging
import Testing

/// A credential change while the LISTEN connection is down sends its NOTIFY to nobody: when the
/// LISTEN is back, every push subscription is checked again, so a tenant suspended meanwhile
/// loses its push (told with `session.revoked`) while another tenant's push goes on.
@Suite(.timeLimit(.minutes(10))) struct PushRecheckTests {
    typealias Collector = MessagesPushTests.Collector

    @Test func aSuspensionDuringAListenOutageEndsPushWhenTheListenIsBack() async throws {
        try await LiveServer.with(server: { $0.outbound.allowPrivateURLs = true; $0.delivery.enabled = false }) { server in
            let (aliceID, aliceToken) = try await CredentialRevocationTests.tenant(server, label: "alice")
            let (_, bobToken) = try await CredentialRevocationTests.tenant(server, label: "bob")
            let (alice, aliceConnection, aliceSeen) = try await CredentialRevocationTests.subscribed(server, token: aliceToken)
            let (bob, bobConnection, bobSeen) = try await CredentialRevocationTests.subscribed(server, token: bobToken)
            defer { Task { await alice.close(); await bob.close() } }
            try await CredentialRevocationTests.sendThenMarker(
                to: aliceConnection, marker: bobConnection, markerSeen: bobSeen, port: server.didcommPort, id: "before")
            try await aliceSeen.wait(for: "messages.received")

            let superuser = AerieDatabase(
                configuration: DatabaseConfiguration(conninfo: server.database.superuserConninfo, maxConnections: 1),
                logger: Logger(label: "test"))
            do {
                // Cut the LISTEN, and suspend alice with no NOTIFY (as if sent during the outage).
                try await superuser.withSession { session in
                    _ = try session.execute("ALTER TABLE aerie.tenants DISABLE TRIGGER tenants_notify_credential")
                    let cut = try session.query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN aerie_events'"
                    ).rowCount
                    #expect(cut == 1)
                    _ = try session.execute("UPDATE aerie.tenants SET status = 'suspended' WHERE id = $1::uuid", [.text(aliceID.rawValue)])
                }
                // The LISTEN comes back within its reconnect delay; the re-check ends alice's push.
                let revoked = try #require(try await aliceSeen.wait(for: "session.revoked").first)
                #expect(revoked.params["code"] == "unauthenticated")
                #expect(bobSeen.all("session.revoked").isEmpty)
                let pushedBefore = aliceSeen.all("messages.received").count
                try await superuser.withSession { session in
                    _ = try session.execute("ALTER TABLE aerie.tenants ENABLE TRIGGER tenants_notify_credential")
                    // Active again in the database, but alice's old session was revoked for good.
                    _ = try session.execute("UPDATE aerie.tenants SET status = 'active' WHERE id = $1::uuid", [.text(aliceID.rawValue)])
                }
                try await CredentialRevocationTests.sendThenMarker(
                    to: aliceConnection, marker: bobConnection, markerSeen: bobSeen, port: server.didcommPort, id: "after")
                #expect(aliceSeen.all("messages.received").count == pushedBefore)
            } catch {
                await superuser.shutdown()
                throw error
            }
            await superuser.shutdown()
        }
    }
}
