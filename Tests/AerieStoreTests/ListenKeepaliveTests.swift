import AerieStore
import AerieTesting
import Testing

/// The LISTEN connection asks libpq for TCP keepalive (an idle connection to a server or path
/// that died silently is found), and a connection string's own keepalive settings win.
@Suite struct ListenKeepaliveTests {
    @Test func theListenConnectionKeepsAliveUnlessTheStringSaysOtherwise() async throws {
        let conninfo = try await TestPostgres.shared.superuserConninfo()
        let defaults = PostgresEventListener.connectionDefaults
        let listening = try PostgresConnection(conninfo: conninfo, defaults: defaults)
        defer { listening.close() }
        #expect(try listening.query("SELECT 1").int(0, 0) == 1)
        for (keyword, value) in defaults {
            #expect(listening.option(keyword) == value, "\(keyword)")
        }
        let overridden = try PostgresConnection(
            conninfo: try ConnectionString.overriding(conninfo, with: ["keepalives_idle": "7"]), defaults: defaults)
        defer { overridden.close() }
        #expect(overridden.option("keepalives_idle") == "7")
        #expect(overridden.option("keepalives") == "1")
        // An ordinary connection is left as libpq has it.
        let plain = try PostgresConnection(conninfo: conninfo)
        defer { plain.close() }
        #expect(plain.option("keepalives_idle") != "30")
    }
}
