import AerieClient
import AerieCore
import AerieCrypto
import AerieServer
import AerieStore
import AerieTesting
import Foundation
import Logging
import Testing

/// `aerie-admin keys rotate-master`: every tenant's data key rewrapped under a new master key,
/// the sealed private keys untouched, and every key still working afterwards.
@Suite(.timeLimit(.minutes(10))) struct MasterKeyRotationTests {
    static let logger: Logger = {
        var logger = Logger(label: "test.rotation")
        logger.logLevel = .warning
        return logger
    }()

    /// Two tenants with keys, and a message packed to each before the rotation.
    struct Before {
        var tenants: [TenantID]
        var keys: [TenantID: String]
        var envelopes: [TenantID: [UInt8]]
        var keyRows: [[String?]]
    }

    static func populate(_ fixture: WalletFixture) async throws -> Before {
        var before = Before(tenants: [], keys: [:], envelopes: [:], keyRows: [])
        let peer = Ed25519KeyPair.generate()
        for label in ["alice", "bob"] {
            let tenant = try await fixture.createTenant(label)
            let key = try await tenant.keys.createKey()
            before.tenants.append(tenant.tenantID)
            before.keys[tenant.tenantID] = key
            before.envelopes[tenant.tenantID] = try DIDCommEnvelope.pack(Array(label.utf8), to: [key], from: peer)
        }
        before.keyRows = try await fixture.keyRows()
        return before
    }

    /// Every tenant's keys sign and unpack with the data key `masterKey` unwraps, and the
    /// sealed rows are byte for byte what they were.
    static func expectEverythingWorks(_ fixture: WalletFixture, _ before: Before, masterKey: MasterKey) async throws {
        for id in before.tenants {
            let wallet = try await fixture.context(id, masterKey: masterKey).keys
            let key = try #require(before.keys[id])
            let signature = try await wallet.sign([7], with: key)
            #expect(KeyWallet.verify(signature: signature, of: [7], by: key))
            let opened = try await wallet.unpack(try #require(before.envelopes[id]))
            #expect(opened.recipientVerkey == key)
        }
        #expect(try await fixture.keyRows() == before.keyRows)
    }

    static func configuration(_ fixture: WalletFixture, home: URL, masterKey: String? = nil) -> AerieConfiguration {
        var configuration = AerieConfiguration(
            home: home, databaseURL: fixture.database.runtimeConninfo, ownerDatabaseURL: fixture.database.ownerConninfo)
        configuration.secrets.masterKeyBase64 = masterKey
        return configuration
    }

    static func fingerprints(_ fixture: WalletFixture) async throws -> [String: Int] {
        try await fixture.runtime.tenants.masterKeyFingerprints()
    }

    @Test func fileKeyRotationKeepsEveryKeyWorking() async throws {
        try await WalletFixture.with { fixture in
            try await withTemporaryDirectory { home in
                let before = try await Self.populate(fixture)
                let old = fixture.masterKey
                try writeKeyFile(home.appendingPathComponent("master-key"), old)

                let rotation = try await AerieApplication.rotateMasterKey(
                    configuration: Self.configuration(fixture, home: home), logger: Self.logger)
                #expect(rotation.source == .file)
                #expect(rotation.rewrapped == 2 && rotation.alreadyRotated == 0 && !rotation.resumed)
                #expect(rotation.oldFingerprint == old.fingerprint)

                let new = try readKeyFile(home.appendingPathComponent("master-key"))
                #expect(new.fingerprint == rotation.newFingerprint && new.fingerprint != old.fingerprint)
                #expect(try readKeyFile(home.appendingPathComponent("master-key.old")).fingerprint == old.fingerprint)
                #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("master-key.new").path))
                #expect(try fileMode(home.appendingPathComponent("master-key")) == 0o600)
                #expect(try fileMode(home.appendingPathComponent("master-key.old")) == 0o600)
                #expect(try await Self.fingerprints(fixture) == [new.fingerprint: 2])

                try await Self.expectEverythingWorks(fixture, before, masterKey: new)
                // The old master key no longer unwraps any tenant's data key.
                for id in before.tenants {
                    let wrapped = try #require(try await fixture.runtime.tenants.wrappedDataKey(id))
                    #expect(throws: CryptoError.self) { try old.unwrap(wrapped, tenantID: id.rawValue) }
                    #expect((try? old.unwrap(wrapped, tenantID: id.rawValue)) == nil)
                    let error = try #require(
                        await thrownError { try old.unwrap(wrapped, tenantID: id.rawValue) } as? CryptoError)
                    #expect(error.code == .wrongMasterKey)
                }

                // A second rotation, to a key the operator supplies.
                let third = MasterKey.generate()
                let again = try await AerieApplication.rotateMasterKey(
                    configuration: Self.configuration(fixture, home: home), newKey: third, logger: Self.logger)
                #expect(again.rewrapped == 2 && again.newFingerprint == third.fingerprint)
                #expect(try readKeyFile(home.appendingPathComponent("master-key.old")).fingerprint == new.fingerprint)
                try await Self.expectEverythingWorks(fixture, before, masterKey: third)
            }
        }
    }

    @Test func anInterruptedRotationIsFinishedByRunningAgain() async throws {
        try await WalletFixture.with { fixture in
            try await withTemporaryDirectory { home in
                let before = try await Self.populate(fixture)
                let old = fixture.masterKey
                try writeKeyFile(home.appendingPathComponent("master-key"), old)
                let pending = home.appendingPathComponent("master-key.new")

                // Stopped after writing master-key.new, before COMMIT: the database is untouched.
                let second = MasterKey.generate()
                try writeKeyFile(pending, second)
                let conflicting = await thrownError {
                    try await AerieApplication.rotateMasterKey(
                        configuration: Self.configuration(fixture, home: home), newKey: .generate(), logger: Self.logger
                    )
                }
                #expect("\(conflicting.map { "\($0)" } ?? "")".contains("unfinished rotation"))
                let resumed = try await AerieApplication.rotateMasterKey(
                    configuration: Self.configuration(fixture, home: home), logger: Self.logger)
                #expect(resumed.resumed && resumed.rewrapped == 2 && resumed.newFingerprint == second.fingerprint)
                #expect(try readKeyFile(home.appendingPathComponent("master-key")).fingerprint == second.fingerprint)
                try await Self.expectEverythingWorks(fixture, before, masterKey: second)

                // Stopped after COMMIT, before the rename: the database already uses the pending key.
                let third = MasterKey.generate()
                try writeKeyFile(pending, third)
                _ = try await fixture.runtime.tenants.rewrapDataKeys(newFingerprint: third.fingerprint) { id, wrapped in
                    try second.rewrap(wrapped, tenantID: id.rawValue, to: third)
                }
                let finished = try await AerieApplication.rotateMasterKey(
                    configuration: Self.configuration(fixture, home: home), logger: Self.logger)
                #expect(finished.resumed && finished.rewrapped == 0 && finished.alreadyRotated == 2)
                #expect(try readKeyFile(home.appendingPathComponent("master-key")).fingerprint == third.fingerprint)
                #expect(
                    try readKeyFile(home.appendingPathComponent("master-key.old")).fingerprint == second.fingerprint)
                #expect(!FileManager.default.fileExists(atPath: pending.path))
                try await Self.expectEverythingWorks(fixture, before, masterKey: third)
            }
        }
    }

    @Test func environmentKeyRotationWritesTheNewKeyToTheGivenFile() async throws {
        try await WalletFixture.with { fixture in
            try await withTemporaryDirectory { home in
                let before = try await Self.populate(fixture)
                let old = fixture.masterKey
                let configuration = Self.configuration(fixture, home: home, masterKey: old.base64)

                // Without a place for the new key, nothing happens.
                let refused = await thrownError {
                    try await AerieApplication.rotateMasterKey(configuration: configuration, logger: Self.logger)
                }
                #expect("\(refused.map { "\($0)" } ?? "")".contains("--write-new-key"))
                #expect(try await Self.fingerprints(fixture) == [old.fingerprint: 2])

                let output = home.appendingPathComponent("new-master-key")
                let rotation = try await AerieApplication.rotateMasterKey(
                    configuration: configuration, writeNewKeyTo: output, logger: Self.logger)
                #expect(rotation.source == .environment && rotation.rewrapped == 2 && rotation.newKeyFile == output)
                #expect(try fileMode(output) == 0o600)
                let new = try readKeyFile(output)
                #expect(new.fingerprint == rotation.newFingerprint)
                #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("master-key").path))
                try await Self.expectEverythingWorks(fixture, before, masterKey: new)

                // Interrupted and run again with the key it wrote: nothing left to do.
                let again = try await AerieApplication.rotateMasterKey(
                    configuration: configuration, newKey: new, logger: Self.logger)
                #expect(again.rewrapped == 0 && again.alreadyRotated == 2)
            }
        }
    }

    @Test func aDataKeyUnderAnUnknownMasterKeyStopsTheRotationWithNoChange() async throws {
        try await WalletFixture.with { fixture in
            try await withTemporaryDirectory { home in
                let before = try await Self.populate(fixture)
                let stray = MasterKey.generate()
                let odd = before.tenants[1]
                let dataKey = try fixture.masterKey.unwrap(
                    try #require(try await fixture.runtime.tenants.wrappedDataKey(odd)), tenantID: odd.rawValue)
                #expect(
                    try await fixture.runtime.tenants.replaceWrappedDataKey(
                        odd, with: stray.wrap(dataKey, tenantID: odd.rawValue), masterKeyFingerprint: stray.fingerprint)
                )
                try writeKeyFile(home.appendingPathComponent("master-key"), fixture.masterKey)
                let wrappedBefore = try await fixture.runtime.tenants.wrappedDataKey(before.tenants[0])

                let failure = await thrownError {
                    try await AerieApplication.rotateMasterKey(
                        configuration: Self.configuration(fixture, home: home), logger: Self.logger)
                }
                #expect("\(failure.map { "\($0)" } ?? "")".contains(stray.fingerprint))
                #expect(try await fixture.runtime.tenants.wrappedDataKey(before.tenants[0]) == wrappedBefore)
                #expect(
                    try readKeyFile(home.appendingPathComponent("master-key")).fingerprint
                        == fixture.masterKey.fingerprint)
                #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("master-key.new").path))
            }
        }
    }

    @Test func aRunningServerFollowsTheRotationOfItsKeyFile() async throws {
        try await LiveServer.with(extraPlugins: [KeyProbePlugin()]) { server in
            let admin = try await server.adminClient()
            let (alice, _) = try await server.tenantClient(label: "alice")
            defer {
                Task {
                    await admin.close()
                    await alice.close()
                }
            }
            let key = try #require(try await alice.call("keyprobe.create").stringValue)
            let envelope = try DIDCommEnvelope.pack(Array("before".utf8), to: [key], from: nil)

            let configuration = AerieConfiguration(
                home: server.home, databaseURL: server.database.runtimeConninfo,
                ownerDatabaseURL: server.database.ownerConninfo)
            let rotation = try await AerieApplication.rotateMasterKey(configuration: configuration, logger: Self.logger)
            #expect(rotation.rewrapped == 1)

            // Still signs and unpacks: the server re-reads master-key when it meets the new fingerprint.
            _ = try await alice.call("keyprobe.sign", params: ["verkey": .string(key), "data": "after"])
            let opened = try await alice.call(
                "keyprobe.unpack", params: ["envelope": .string(String(decoding: envelope, as: UTF8.self))])
            #expect(opened["message"] == "before")

            // New tenants are wrapped by the new key, and their wallets work.
            let created = try await admin.call("admin.tenants.create", params: ["label": "carol"])
            let carol = try await server.client()
            defer { Task { await carol.close() } }
            try await carol.authenticate(token: try #require(created["token"]?.stringValue))
            let carolKey = try #require(try await carol.call("keyprobe.create").stringValue)
            _ = try await carol.call("keyprobe.sign", params: ["verkey": .string(carolKey), "data": "x"])
            let runtime = server.database.runtime()
            defer { Task { await runtime.shutdown() } }
            #expect(try await runtime.tenants.masterKeyFingerprints() == [rotation.newFingerprint: 2])
        }
    }

    @Test func aServerStillOnTheOldKeyCreatesNoTenantUnderIt() async throws {
        try await LiveServer.with(extraPlugins: [KeyProbePlugin()]) { server in
            let admin = try await server.adminClient()
            defer { Task { await admin.close() } }
            _ = try await admin.call("admin.tenants.create", params: ["label": "alice"])
            // Rotated with a key this server is never given (as with AERIE_MASTER_KEY).
            try await withTemporaryDirectory { elsewhere in
                let current = try readKeyFile(server.home.appendingPathComponent("master-key"))
                var configuration = AerieConfiguration(
                    home: elsewhere, databaseURL: server.database.runtimeConninfo, ownerDatabaseURL: server.database.ownerConninfo)
                configuration.secrets.masterKeyBase64 = current.base64
                _ = try await AerieApplication.rotateMasterKey(
                    configuration: configuration, writeNewKeyTo: elsewhere.appendingPathComponent("new"),
                    logger: Self.logger)
            }
            await expectCode("unavailable") { try await admin.call("admin.tenants.create", params: ["label": "bob"]) }
            let runtime = server.database.runtime()
            defer { Task { await runtime.shutdown() } }
            #expect(try await runtime.tenants.masterKeyFingerprints().count == 1)
        }
    }

    @Test func startupRefusesAMasterKeyThatOpensNoTenant() async throws {
        try await WalletFixture.with { fixture in
            try await withTemporaryDirectory { home in
                _ = try await Self.populate(fixture)
                var configuration = Self.configuration(fixture, home: home, masterKey: MasterKey.generate().base64)
                configuration.rpc.port = 0
                let error = await thrownError {
                    try await AerieApplication.prepare(configuration: configuration, logger: Self.logger)
                }
                #expect("\(error.map { "\($0)" } ?? "")".contains("does not match the database"))
            }
        }
    }
}
