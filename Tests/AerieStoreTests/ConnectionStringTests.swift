import AerieStore
import Testing

@Suite(.timeLimit(.minutes(10))) struct ConnectionStringTests {
    @Test func quotesValuesThatNeedIt() throws {
        let made = ConnectionString.make(["host": "/tmp/a dir/it's", "user": "aerie_app"])
        #expect(made == #"host='/tmp/a dir/it\'s' user='aerie_app'"#)
        let parsed = try ConnectionString.parse(made)
        #expect(parsed.first { $0.key == "host" }?.value == "/tmp/a dir/it's")
    }

    @Test func overridesKeyValueAndURIForms() throws {
        let fromPairs = try ConnectionString.overriding(
            "host=/run/pg user=postgres dbname=postgres password=secret",
            with: ["user": "aerie_owner", "dbname": "aerie", "password": nil])
        let pairs = try ConnectionString.parse(fromPairs)
        #expect(pairs.first { $0.key == "user" }?.value == "aerie_owner")
        #expect(pairs.first { $0.key == "dbname" }?.value == "aerie")
        #expect(pairs.first { $0.key == "host" }?.value == "/run/pg")
        #expect(!pairs.contains { $0.key == "password" })

        let fromURI = try ConnectionString.overriding(
            "postgresql://postgres@localhost:5433/postgres?sslmode=disable", with: ["dbname": "x"])
        let uriPairs = try ConnectionString.parse(fromURI)
        #expect(uriPairs.first { $0.key == "port" }?.value == "5433")
        #expect(uriPairs.first { $0.key == "dbname" }?.value == "x")
        #expect(uriPairs.first { $0.key == "sslmode" }?.value == "disable")
    }

    @Test func rejectsMalformedStrings() {
        #expect(throws: DatabaseSetupError.self) { try ConnectionString.parse("host='unterminated") }
    }
}
