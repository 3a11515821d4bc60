import AerieCore
import AerieCrypto
import AerieTesting
import Foundation
import Testing

/// `aerie-admin keys rotate-master` run as a real process against a test database.
@Suite(.timeLimit(.minutes(10))) struct AdminKeysToolTests {
    func run(_ arguments: [String], home: URL, fixture: WalletFixture, masterKey: String? = nil) async throws
        -> (status: Int32, stdout: String, stderr: String)
    {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AERIE_") }
        environment["AERIE_HOME"] = home.path
        environment["AERIE_DATABASE_URL"] = fixture.database.runtimeConninfo
        environment["AERIE_OWNER_DATABASE_URL"] = fixture.database.ownerConninfo
        if let masterKey { environment["AERIE_MASTER_KEY"] = masterKey }
        return try await runProcess(try BuiltProducts.executable("aerie-admin"), arguments, environment: environment)
    }

    @Test func rotateMasterWithAKeyFile() async throws {
        try await WalletFixture.with { fixture in
            try await withTemporaryDirectory { home in
                let before = try await MasterKeyRotationTests.populate(fixture)
                try writeKeyFile(home.appendingPathComponent("master-key"), fixture.masterKey)

                let result = try await run(["keys", "rotate-master", "--json"], home: home, fixture: fixture)
                #expect(result.status == 0, "\(result.stderr)")
                let summary = try JSONValue(parsing: result.stdout)
                #expect(summary["rewrapped"] == 2)
                #expect(summary["source"] == "file")
                #expect(summary["oldFingerprint"] == .string(fixture.masterKey.fingerprint))
                let new = try readKeyFile(home.appendingPathComponent("master-key"))
                #expect(summary["newFingerprint"] == .string(new.fingerprint))
                #expect(!result.stdout.contains(new.base64) && !result.stderr.contains(new.base64))
                try await MasterKeyRotationTests.expectEverythingWorks(fixture, before, masterKey: new)

                let text = try await run(["keys", "rotate-master"], home: home, fixture: fixture)
                #expect(text.status == 0, "\(text.stderr)")
                #expect(text.stdout.contains("tenants rewrapped: 2"))
                #expect(text.stdout.contains("master-key.old"))
                let newest = try readKeyFile(home.appendingPathComponent("master-key"))
                try await MasterKeyRotationTests.expectEverythingWorks(fixture, before, masterKey: newest)
            }
        }
    }

    @Test func rotateMasterWithAnEnvironmentKey() async throws {
        try await WalletFixture.with { fixture in
            try await withTemporaryDirectory { home in
                let before = try await MasterKeyRotationTests.populate(fixture)
                let old = fixture.masterKey.base64

                let refused = try await run(["keys", "rotate-master"], home: home, fixture: fixture, masterKey: old)
                #expect(refused.status == 1)
                #expect(refused.stderr.contains("--write-new-key"))

                let output = home.appendingPathComponent("next-key")
                let result = try await run(
                    ["keys", "rotate-master", "--write-new-key", output.path], home: home, fixture: fixture,
                    masterKey: old)
                #expect(result.status == 0, "\(result.stderr)")
                #expect(result.stdout.contains("AERIE_MASTER_KEY") && result.stdout.contains("restart"))
                #expect(try fileMode(output) == 0o600)
                let new = try readKeyFile(output)
                #expect(!result.stdout.contains(new.base64))
                try await MasterKeyRotationTests.expectEverythingWorks(fixture, before, masterKey: new)

                // A key of one's own, given as a file.
                let mine = MasterKey.generate()
                let mineFile = home.appendingPathComponent("my-key")
                try writeKeyFile(mineFile, mine)
                let supplied = try await run(
                    ["keys", "rotate-master", "--new-key-file", mineFile.path, "--json"], home: home, fixture: fixture,
                    masterKey: new.base64)
                #expect(supplied.status == 0, "\(supplied.stderr)")
                #expect(try JSONValue(parsing: supplied.stdout)["newFingerprint"] == .string(mine.fingerprint))
                try await MasterKeyRotationTests.expectEverythingWorks(fixture, before, masterKey: mine)
            }
        }
    }

    @Test func helpExplainsTheProcedure() async throws {
        let help = try await runProcess(
            try BuiltProducts.executable("aerie-admin"), ["keys", "rotate-master", "--help"],
            environment: ProcessInfo.processInfo.environment)
        #expect(help.status == 0)
        for text in [
            "master-key.new", "master-key.old", "AERIE_MASTER_KEY", "--write-new-key", "--new-key-file", "run it again",
        ] {
            #expect(help.stdout.contains(text), "help lacks \(text)")
        }
    }
}
