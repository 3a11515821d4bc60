import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Logging
import OutOfBandPlugin
import Testing

@testable import AerieServer

/// Issue 15: what a tenant owns is sealed at rest. A superuser's view of every table (and a
/// `pg_dump`) holds none of the plaintext; sealed values do not open anywhere but where they were
/// written; a deleted tenant's dumped rows stay closed once the master key is rotated; rows of
/// the previous release are read, then sealed in the background.
@Suite(.timeLimit(.minutes(10))) struct SealedStorageTests {
    /// Strings a tenant's flows put in the store; none may appear at rest.
    static let secrets = [
        "Secret Setting Value", "Faber College Secret Label", "Invitation Label Secret", "inv-secret-id",
        "did:sov:SecretPublicDid", "SecretFirstRecipientKey", "https://peer-secret.example/in", "SecretTheirVerkey",
        "Secret failure reason", "Secret problem explain", "Basic message secret content", "SenderVerkeySecret",
        "thread-secret-id", "oob-secret-id", "Attachment field secret", "https://logo-secret.example/logo.png",
        "Secret goal text", "did:peer:2.SecretTheirDid", "Secret delivery error", "Secret retry error", "/secret-path-token",
    ]

    static func populate(_ tenant: TenantContext, suffix: String = "") async throws -> (connection: UUID, message: UUID) {
        let connection = ConnectionRecord(
            state: .failed, invitation: ["@id": "inv-secret-id", "label": "Invitation Label Secret"],
            invitationKind: "connections/1.0", invitationId: "inv-secret-id", publicDid: "did:sov:SecretPublicDid",
            firstRecipientKey: "SecretFirstRecipientKey", invitationEndpoint: "https://peer-secret.example/in",
            invitationRoutingKeys: ["SecretFirstRecipientKey"], myDid: "MyDid\(suffix)", myVerkey: "MyVerkey\(suffix)",
            threadId: "thread-secret-id", theirDid: "did:peer:2.SecretTheirDid", theirVerkey: "SecretTheirVerkey",
            theirEndpoint: "https://peer-secret.example/in", label: "Faber College Secret Label",
            logoUrl: "https://logo-secret.example/logo.png", goal: "Secret goal text", goalCode: "aries.vc",
            failureReason: "Secret failure reason", problemReport: ["explain": "Secret problem explain"])
        let message = MailboxMessage(
            connectionId: connection.id, recipientVerkey: "MyVerkey\(suffix)", senderVerkey: "SenderVerkeySecret",
            messageId: UUID().uuidString, type: "https://didcomm.org/basicmessage/1.0/message",
            threadId: "thread-secret-id", payload: ["content": "Basic message secret content"])
        let oob = OutOfBandRecord(
            invitationId: "oob-secret-id", connectionId: connection.id, decisionRow: 5, state: .done,
            reuseMessageId: "reuse-\(UUID())", attachedMessage: ["comment": "Attachment field secret"],
            failureReason: "Secret failure reason", invitation: ["@id": "oob-secret-id", "label": "Invitation Label Secret"])
        // Two sends: one failed for good (its message keeps the error), one to be retried (its
        // outbox row keeps the error).
        let sent = MailboxMessage(
            connectionId: connection.id, recipientVerkey: "TheirVerkey\(suffix)", senderVerkey: nil, messageId: UUID().uuidString,
            type: "https://didcomm.org/basicmessage/1.0/message", threadId: nil, status: MailboxMessage.queued,
            payload: ["content": "sent"], direction: .sent)
        let failing = OutboxItem(
            connectionId: connection.id, endpoint: "http://peer.example/secret-path-token", envelope: [1], messageUid: sent.uid)
        let retried = OutboxItem(connectionId: connection.id, endpoint: "http://peer.example/secret-path-token", envelope: [2])
        try await tenant.database.transaction { tx in
            try tx.settings.set("profile", to: ["name": "Secret Setting Value"])
            try tx.connections.insert(connection)
            _ = try tx.mailbox.insert(message)
            _ = try tx.mailbox.insertSent(sent)
            try tx.outbox.enqueue(failing)
            try tx.outbox.enqueue(retried)
            try tx.repository(OutOfBandRepository.self).insert(oob)
        }
        try await tenant.database.transaction { tx in
            try tx.outbox.recordFailure(failing.id, attempts: 1, nextAttemptAt: nil, error: "Secret delivery error")
            try tx.outbox.recordFailure(retried.id, attempts: 1, nextAttemptAt: Date().addingTimeInterval(600), error: "Secret retry error")
        }
        return (connection.id, message.uid)
    }

    /// Every row of every table in schema `aerie`, as JSON text (bytea as hex), as the superuser sees it.
    static func everyRow(_ fixture: WalletFixture) async throws -> String {
        try await everyRow(fixture.database)
    }

    static func everyRow(_ database: TestDatabase) async throws -> String {
        try await WalletFixture.asSuperuser(database) { session in
            let tables = try session.query(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'aerie' ORDER BY tablename"
            ).allRows().compactMap { $0.first ?? nil }
            return try tables.map { table in
                try session.query("SELECT row_to_json(t)::text FROM aerie.\"\(table)\" t").allRows()
                    .map { $0.first.flatMap { $0 } ?? "" }.joined(separator: "\n")
            }.joined(separator: "\n")
        }
    }

    /// `pg_dump` of the test database's schema `aerie` (data only). A scan that cannot run fails:
    /// no pg_dump, a dump that fails, writes no table, or is still running after two minutes (it
    /// is ended) throws, never skips.
    static func pgDump(_ conninfo: String) throws -> String {
        var candidates = ProcessInfo.processInfo.environment["AERIE_PG_BIN"].map { [$0] } ?? []
        let root = "/usr/lib/postgresql"
        candidates += ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted().reversed()
            .map { "\(root)/\($0)/bin" }
        candidates += ["/usr/bin", "/usr/local/bin"]
        let tool = try #require(
            candidates.map({ "\($0)/pg_dump" }).first(where: FileManager.default.isExecutableFile),
            "pg_dump not found (set AERIE_PG_BIN): the at-rest scan cannot run")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = ["--data-only", "--schema=aerie", "-d", conninfo]
        // Its error output to a file: a pipe left unread could fill and stall it.
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("pg_dump-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errors) }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
        // Bounded: a dump that hangs is ended, which closes the pipe the read below waits on.
        let limit = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 120, execute: limit)
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        limit.cancel()
        let dump = String(decoding: data, as: UTF8.self)
        try #require(
            process.terminationReason == .exit && process.terminationStatus == 0,
            "pg_dump ended with \(process.terminationReason == .exit ? "status" : "signal") \(process.terminationStatus) (ended after 120 s if signal 15): \((try? String(contentsOf: errors, encoding: .utf8)) ?? "")")
        try #require(dump.contains("COPY aerie."), "pg_dump wrote no table of schema aerie")
        return dump
    }

    static func expectNoSecrets(
        _ secrets: [String] = secrets, in text: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for secret in secrets {
            let hex = Hex.encode(Array(secret.utf8))
            #expect(!text.contains(secret), "\(what) shows \(secret)", sourceLocation: sourceLocation)
            #expect(!text.lowercased().contains(hex), "\(what) shows \(secret) as hex", sourceLocation: sourceLocation)
        }
    }

    @Test func nothingATenantOwnsIsInClearAtRest() async throws {
        try await WalletFixture.with { fixture in
            let alice = try await fixture.createTenant("Alice Secret Tenant Label")
            let bob = try await fixture.createTenant("Bob Secret Tenant Label")
            let secrets = Self.secrets + ["Alice Secret Tenant Label", "Bob Secret Tenant Label"]
            let (aliceConnection, aliceMessage) = try await Self.populate(alice)
            _ = try await Self.populate(bob)

            let rows = try await Self.everyRow(fixture)
            #expect(rows.contains("MyVerkey"), "the dump sees the rows")
            Self.expectNoSecrets(secrets, in: rows, "a superuser's SELECT")
            let dump = try Self.pgDump(fixture.database.superuserConninfo)
            #expect(dump.contains("MyVerkey") && dump.contains("COPY aerie.mailbox"))
            Self.expectNoSecrets(secrets, in: dump, "pg_dump")

            // Everything reads back through the tenant's own context, lookups through the hashes.
            let (setting, connection, message, oob, byId, byDid, byKey) = try await alice.database.transaction { tx in
                (
                    try tx.settings.get("profile"), try tx.connections.get(aliceConnection), try tx.mailbox.get(aliceMessage),
                    try tx.repository(OutOfBandRepository.self).find(invitationId: "oob-secret-id", forUpdate: false),
                    try tx.connections.findMatching(invitationId: "inv-secret-id", publicDid: nil, firstRecipientKey: nil),
                    try tx.connections.findMatching(invitationId: nil, publicDid: "did:sov:SecretPublicDid", firstRecipientKey: nil),
                    try tx.connections.findMatching(invitationId: nil, publicDid: nil, firstRecipientKey: "SecretFirstRecipientKey")
                )
            }
            #expect(setting == ["name": "Secret Setting Value"])
            #expect(connection?.label == "Faber College Secret Label" && connection?.theirVerkey == "SecretTheirVerkey")
            #expect(connection?.theirDid == "did:peer:2.SecretTheirDid")
            #expect(connection?.invitation["label"] == "Invitation Label Secret")
            #expect(connection?.problemReport?["explain"] == "Secret problem explain")
            #expect(connection?.invitationRoutingKeys == ["SecretFirstRecipientKey"] && connection?.threadId == "thread-secret-id")
            #expect(message?.payload["content"] == "Basic message secret content" && message?.senderVerkey == "SenderVerkeySecret")
            #expect(oob?.attachedMessage?["comment"] == "Attachment field secret" && oob?.connectionId == aliceConnection)
            #expect([byId?.id, byDid?.id, byKey?.id] == [aliceConnection, aliceConnection, aliceConnection])

            // Equal values of two tenants hash differently: nothing links them in the database.
            let hashes = try await fixture.asSuperuser { session in
                try session.query("SELECT DISTINCT encode(invitation_id_hash, 'hex') FROM aerie.connections").rowCount
            }
            #expect(hashes == 2)
        }
    }

    @Test func aSealedValueMovedToAnotherRowColumnOrTenantDoesNotOpen() async throws {
        try await WalletFixture.with { fixture in
            let alice = try await fixture.createTenant("alice")
            let bob = try await fixture.createTenant("bob")
            let (first, _) = try await Self.populate(alice, suffix: "1")
            let second = ConnectionRecord(invitation: ["@id": "other"], invitationKind: "connections/1.0", myDid: "D2", myVerkey: "V2")
            // Bob holds a row with the very same id as Alice's.
            let bobs = ConnectionRecord(id: first, invitation: ["@id": "bob's"], invitationKind: "connections/1.0")
            try await alice.database.transaction { tx in
                try tx.connections.insert(second)
                try tx.settings.set("other", to: "x")
            }
            try await bob.database.transaction { try $0.connections.insert(bobs) }

            try await fixture.asSuperuser { session in
                let ids = [first.uuidString.lowercased(), second.id.uuidString.lowercased()]
                // Another row of the same table and tenant.
                try session.execute(
                    "UPDATE aerie.connections SET sealed = (SELECT sealed FROM aerie.connections WHERE tenant_id = $1::uuid AND id = $2::uuid) WHERE tenant_id = $1::uuid AND id = $3::uuid",
                    [.text(alice.tenantID.rawValue), .text(ids[0]), .text(ids[1])])
                // Another tenant, same row id.
                try session.execute(
                    "UPDATE aerie.connections SET sealed = (SELECT sealed FROM aerie.connections WHERE tenant_id = $1::uuid AND id = $2::uuid) WHERE tenant_id = $3::uuid AND id = $2::uuid",
                    [.text(alice.tenantID.rawValue), .text(ids[0]), .text(bob.tenantID.rawValue)])
                // Another key (row) of settings.
                try session.execute(
                    "UPDATE aerie.tenant_settings SET sealed = (SELECT sealed FROM aerie.tenant_settings WHERE tenant_id = $1::uuid AND key = 'profile') WHERE tenant_id = $1::uuid AND key = 'other'",
                    [.text(alice.tenantID.rawValue)])
            }
            for (tenant, read) in [
                (alice, { @Sendable (tx: any TenantTransaction) throws -> Bool in try tx.connections.get(second.id) != nil }),
                (bob, { @Sendable (tx: any TenantTransaction) throws -> Bool in try tx.connections.get(first) != nil }),
                (alice, { @Sendable (tx: any TenantTransaction) throws -> Bool in try tx.settings.get("other") != nil }),
            ] {
                let error = await thrownError { try await tenant.database.transaction { try read($0) } }
                let aerie = try #require(error as? AerieError)
                #expect(aerie.code == .internalError)
                #expect(String(reflecting: aerie).contains("does not open"), "\(String(reflecting: aerie))")
            }
            // The untouched rows still open.
            #expect(try await alice.database.transaction { try $0.connections.get(first) }?.label == "Faber College Secret Label")
            #expect(try await alice.database.transaction { try $0.settings.get("profile") } == ["name": "Secret Setting Value"])
        }
    }

    /// Crypto-shredding: a dump taken before the deletion holds the tenant's rows and its wrapped
    /// data key; after the documented rotation (and the old key file destroyed) nothing opens them.
    @Test func aDeletedTenantsDumpStaysClosedAfterTheMasterKeyRotation() async throws {
        try await WalletFixture.with { fixture in
            try await withTemporaryDirectory { home in
                let alice = try await fixture.createTenant("alice")
                let bob = try await fixture.createTenant("bob")
                let (connection, _) = try await Self.populate(alice)
                _ = try await Self.populate(bob, suffix: "b")
                try writeKeyFile(home.appendingPathComponent("master-key"), fixture.masterKey)

                // The backup taken before the deletion.
                let (wrapped, sealed) = try await fixture.asSuperuser { session in
                    let key = try session.query(
                        "SELECT data_key_wrapped FROM aerie.tenants WHERE id = $1::uuid", [.text(alice.tenantID.rawValue)])
                    let row = try session.query(
                        "SELECT sealed FROM aerie.connections WHERE tenant_id = $1::uuid AND id = $2::uuid",
                        [.text(alice.tenantID.rawValue), .text(connection.uuidString.lowercased())])
                    return (key.bytes(0, 0) ?? [], row.bytes(0, 0) ?? [])
                }
                // With the old master key the backup is readable: the reason the procedure exists.
                let oldKey = try fixture.masterKey.unwrap(wrapped, tenantID: alice.tenantID.rawValue)
                let label = try oldKey.sealer(for: alice.tenantID).open(
                    sealed, table: "connections", column: "sealed", row: connection.uuidString.lowercased())
                #expect(String(decoding: label, as: UTF8.self).contains("Faber College Secret Label"))

                // 1. Delete: the rows and the wrapped key go in one transaction.
                let counts = try #require(try await fixture.runtime.tenants.delete(alice.tenantID))
                #expect(counts["connections"] == 1 && counts["mailbox"] == 2 && counts["tenant_settings"] == 1)
                #expect(try await fixture.runtime.tenants.wrappedDataKey(alice.tenantID) == nil)
                let left = try await fixture.asSuperuser { session in
                    try session.query(
                        """
                        SELECT (SELECT count(*) FROM aerie.tenants WHERE id = $1::uuid)
                            + (SELECT count(*) FROM aerie.connections WHERE tenant_id = $1::uuid)
                            + (SELECT count(*) FROM aerie.mailbox WHERE tenant_id = $1::uuid)
                            + (SELECT count(*) FROM aerie.oob_invitations WHERE tenant_id = $1::uuid)
                            + (SELECT count(*) FROM aerie.tenant_settings WHERE tenant_id = $1::uuid)
                        """, [.text(alice.tenantID.rawValue)]
                    ).int(0, 0)
                }
                #expect(left == 0)

                // 2. Rotate the master key (only data keys are rewrapped), 3. destroy the old file.
                let rotation = try await AerieApplication.rotateMasterKey(
                    configuration: AerieConfiguration(
                        home: home, databaseURL: fixture.database.runtimeConninfo,
                        ownerDatabaseURL: fixture.database.ownerConninfo),
                    logger: Logger(label: "test"))
                #expect(rotation.rewrapped == 1)
                let newMaster = try readKeyFile(home.appendingPathComponent("master-key"))
                #expect(newMaster.fingerprint != fixture.masterKey.fingerprint)
                // The rotation keeps the old key as master-key.old (for older backups): destroying it
                // is the step that makes the deleted tenant's backups unreadable.
                let oldFile = home.appendingPathComponent("master-key.old")
                #expect(try readKeyFile(oldFile).fingerprint == fixture.masterKey.fingerprint)
                try FileManager.default.removeItem(at: oldFile)

                // The backup's wrapped key does not open with the current master key, so nothing of it does.
                #expect(throws: CryptoError.self) { try newMaster.unwrap(wrapped, tenantID: alice.tenantID.rawValue) }
                // Bob, still a tenant, reads everything under the new master key.
                let bobNow = try await fixture.context(bob.tenantID, masterKey: newMaster)
                #expect(try await bobNow.database.transaction { try $0.settings.get("profile") } == ["name": "Secret Setting Value"])
            }
        }
    }

    /// The upgrade: a database at the schema before 0018 with rows in clear (written by SQL, as
    /// the previous release did), migrated; every old value reads, lookups find old rows, then
    /// the background re-encryption seals them in batches (resuming where a first batch stopped)
    /// and clears the clear columns; a second sweep has nothing to do.
    /// Rows of the release before: sealed, but the connection's DID and the delivery errors in
    /// clear. They read, the background sweep finds both tenants and seals them (and nothing of
    /// the rest changes), and nothing is left in clear.
    @Test func clearDIDsAndDeliveryErrorsOfSealedRowsAreSealedInTheBackground() async throws {
        try await WalletFixture.with { fixture in
            var quiet = Logger(label: "test")
            quiet.logLevel = .warning
            let alice = try await fixture.createTenant("alice")
            let bob = try await fixture.createTenant("bob")
            let (aliceConnection, _) = try await Self.populate(alice)
            let (bobConnection, _) = try await Self.populate(bob, suffix: "-bob")
            #expect(try await fixture.runtime.tenantsWithClearRows(limit: 10).isEmpty)
            // As the previous release wrote them.
            _ = try await fixture.asSuperuser { session in
                try session.execute("UPDATE aerie.connections SET their_did = 'did:peer:2.SecretOldDid', their_did_sealed = NULL")
                try session.execute(
                    "UPDATE aerie.mailbox SET delivery_error = 'Secret old delivery error', delivery_error_sealed = NULL WHERE direction = 'sent'")
                try session.execute(
                    """
                    UPDATE aerie.outbox SET last_error = 'Secret old retry error', last_error_sealed = NULL,
                        endpoint = 'https://old-peer.example/old-secret-path', endpoint_sealed = NULL, destination = NULL
                    """)
            }
            let old = ["did:peer:2.SecretOldDid", "Secret old delivery error", "Secret old retry error", "/old-secret-path"]
            @Sendable func expectReads(_ tenant: TenantContext, _ id: UUID) async throws {
                let (connection, sent, waiting) = try await tenant.database.transaction { tx in
                    (
                        try tx.connections.get(id),
                        try tx.mailbox.list(connectionId: id, status: MailboxMessage.deliveryFailed, type: nil, limit: 10),
                        try tx.outbox.list(connectionId: id, limit: 10)
                    )
                }
                #expect(connection?.theirDid == "did:peer:2.SecretOldDid" && connection?.label == "Faber College Secret Label")
                #expect(sent.map(\.deliveryError) == ["Secret old delivery error"])
                #expect(waiting.map(\.lastError) == ["Secret old retry error"])
                #expect(waiting.map(\.endpoint) == ["https://old-peer.example/old-secret-path"])
            }
            try await expectReads(alice, aliceConnection)
            try await expectReads(bob, bobConnection)
            #expect(Set(try await fixture.runtime.tenantsWithClearRows(limit: 10)) == [alice.tenantID, bob.tenantID])

            let contexts = TenantContexts(database: fixture.runtime, masterKeys: MasterKeyring(keys: [fixture.masterKey], home: nil))
            let service = SealingMigrationService(database: fixture.runtime, contexts: contexts, logger: quiet)
            #expect(try await service.sweep() == 2 * 3)
            #expect(try await fixture.runtime.tenantsWithClearRows(limit: 10).isEmpty)
            #expect(try await service.sweep() == 0)
            try await expectReads(alice, aliceConnection)
            try await expectReads(bob, bobConnection)
            let clearLeft = try await fixture.asSuperuser { session in
                try session.query(
                    """
                    SELECT (SELECT count(*) FROM aerie.connections WHERE their_did IS NOT NULL OR their_did_sealed IS NULL)
                        + (SELECT count(*) FROM aerie.mailbox WHERE delivery_error IS NOT NULL)
                        + (SELECT count(*) FROM aerie.outbox WHERE last_error IS NOT NULL OR last_error_sealed IS NULL
                            OR endpoint IS NOT NULL OR endpoint_sealed IS NULL OR destination IS DISTINCT FROM 'https://old-peer.example')
                    """
                ).int(0, 0)
            }
            #expect(clearLeft == 0)
            Self.expectNoSecrets(Self.secrets + old, in: try await Self.everyRow(fixture), "a superuser's SELECT after the sweep")
            Self.expectNoSecrets(Self.secrets + old, in: try Self.pgDump(fixture.database.superuserConninfo), "pg_dump after the sweep")
        }
    }

    @Test func previousReleaseRowsReadThenSealedInTheBackground() async throws {
        try await WalletFixture.with(migrate: false) { try await Self.upgrade($0) }
    }

    static func upgrade(_ fixture: WalletFixture) async throws {
        let (database, runtime, master) = (fixture.database, fixture.runtime, fixture.masterKey)
        var quiet = Logger(label: "test")
        quiet.logLevel = .warning
        // The schema before 0018, the out-of-band plugin's table (version 6) included.
        #expect(try await database.migrator().migrate(through: 17).contains(6))

        // Tenants as the previous release wrote them, the label in clear.
        var made: [TenantContext] = []
        for label in ["Alice Secret Tenant Label", "Bob Secret Tenant Label"] {
            let id = TenantID.random()
            _ = try await fixture.asSuperuser { session in
                try session.execute(
                    """
                    INSERT INTO aerie.tenants (id, label, token_hash, data_key_wrapped, master_key_fingerprint)
                    VALUES ($1::uuid, $2, $3, $4, $5)
                    """,
                    [
                        .text(id.rawValue), .text(label), .bytes(Random.bytes(32)),
                        .bytes(master.wrap(DataKey.generate(), tenantID: id.rawValue)), .text(master.fingerprint),
                    ])
            }
            made.append(try await fixture.context(id))
        }
        let (alice, bob) = (made[0], made[1])
        let labels = [alice.tenantID: "Alice Secret Tenant Label", bob.tenantID: "Bob Secret Tenant Label"]
        let connection = UUID()
        let messages = [UUID(), UUID(), UUID()]
        let oob = UUID()
        let failedSend = UUID()
        let retried = UUID()
        for tenant in [alice, bob] {
            _ = try await fixture.asSuperuser { session in
                let t = SQLValue.text(tenant.tenantID.rawValue)
                try session.execute(
                    """
                    INSERT INTO aerie.connections (tenant_id, id, state, invitation, invitation_kind, invitation_id,
                        public_did, first_recipient_key, invitation_endpoint, invitation_routing_keys, my_did, my_verkey,
                        thread_id, their_did, their_verkey, their_endpoint, their_routing_keys, label, logo_url, goal,
                        goal_code, failure_reason, problem_report, handshake_protocol)
                    VALUES ($1::uuid, $2::uuid, 'failed',
                        '{"@id": "inv-secret-id", "label": "Invitation Label Secret"}', 'connections/1.0', 'inv-secret-id',
                        'did:sov:SecretPublicDid', 'SecretFirstRecipientKey', 'https://peer-secret.example/in',
                        '["SecretFirstRecipientKey"]', 'MyDid', 'MyVerkey', 'thread-secret-id', 'did:peer:2.SecretTheirDid',
                        'SecretTheirVerkey', 'https://peer-secret.example/in', '[]', 'Faber College Secret Label',
                        'https://logo-secret.example/logo.png', 'Secret goal text', 'aries.vc', 'Secret failure reason',
                        '{"explain": "Secret problem explain"}', 'connections/1.0')
                    """, [t, .text(connection.uuidString)])
                for (index, uid) in messages.enumerated() {
                    try session.execute(
                        """
                        INSERT INTO aerie.mailbox (tenant_id, uid, connection_id, recipient_verkey, sender_verkey, message_id,
                            type, thread_id, payload, received_at)
                        VALUES ($1::uuid, $2::uuid, $3::uuid, 'MyVerkey', 'SenderVerkeySecret', $4,
                            'https://didcomm.org/basicmessage/1.0/message', 'thread-secret-id',
                            '{"content": "Basic message secret content"}', now() - make_interval(secs => $5::int))
                        """, [t, .text(uid.uuidString), .text(connection.uuidString), .text("m-\(index)"), .int(10 - index)])
                }
                try session.execute(
                    """
                    INSERT INTO aerie.oob_invitations (tenant_id, id, invitation_id, connection_id, decision_row, state,
                        reuse_message_id, attached_message, failure_reason, invitation)
                    VALUES ($1::uuid, $2::uuid, 'oob-secret-id', $3::uuid, 5, 'done', 'reuse-1',
                        '{"comment": "Attachment field secret"}', 'Secret failure reason',
                        '{"@id": "oob-secret-id", "label": "Invitation Label Secret"}')
                    """, [t, .text(oob.uuidString), .text(connection.uuidString)])
                try session.execute(
                    "INSERT INTO aerie.tenant_settings (tenant_id, key, value) VALUES ($1::uuid, 'profile', '{\"name\": \"Secret Setting Value\"}')",
                    [t])
                // A send that failed for good, and one waiting for a retry, each with its error.
                try session.execute(
                    """
                    INSERT INTO aerie.mailbox (tenant_id, uid, connection_id, recipient_verkey, message_id, type, payload,
                        direction, status, delivery_error)
                    VALUES ($1::uuid, $2::uuid, $3::uuid, 'TheirVerkey', 'sent-1', 'https://didcomm.org/basicmessage/1.0/message',
                        '{"content": "sent"}', 'sent', 'MS-105', 'Secret delivery error')
                    """, [t, .text(failedSend.uuidString), .text(connection.uuidString)])
                try session.execute(
                    """
                    INSERT INTO aerie.outbox (tenant_id, id, connection_id, endpoint, envelope, attempts, next_attempt_at, status, last_error)
                    VALUES ($1::uuid, $2::uuid, $3::uuid, 'http://peer.example/secret-path-token', '\\x01', 1, now() + interval '1 hour', 'pending',
                        'Secret retry error')
                    """, [t, .text(retried.uuidString), .text(connection.uuidString)])
            }
        }

        _ = try await database.migrator().migrate()
        #expect(try await database.migrator().appliedVersions().contains(18))

        @Sendable func expectEverythingReads(_ tenant: TenantContext) async throws {
            let (setting, record, byId, byDid, page, found, stored, failed, waiting) = try await tenant.database.transaction { tx in
                (
                    try tx.settings.get("profile"), try tx.connections.get(connection),
                    try tx.connections.findMatching(invitationId: "inv-secret-id", publicDid: nil, firstRecipientKey: nil),
                    try tx.connections.findMatching(invitationId: nil, publicDid: "did:sov:SecretPublicDid", firstRecipientKey: nil),
                    try tx.mailbox.download(
                        MailboxQuery(statuses: [MailboxMessage.received], uids: nil, pairwiseDids: ["MyDid"], after: nil, limit: 10)),
                    try tx.repository(OutOfBandRepository.self).find(invitationId: "oob-secret-id", forUpdate: false),
                    try messages.map { try tx.mailbox.get($0) }, try tx.mailbox.get(failedSend),
                    try tx.outbox.list(connectionId: connection, limit: 10)
                )
            }
            #expect(record?.theirDid == "did:peer:2.SecretTheirDid")
            let label = try await runtime.tenants.get(tenant.tenantID)?.label.open(tenant: tenant.tenantID) { id, wrapped in
                try master.unwrap(wrapped, tenantID: id.rawValue).sealer(for: id)
            }
            #expect(label == labels[tenant.tenantID])
            #expect(failed?.deliveryError == "Secret delivery error" && failed?.status == MailboxMessage.deliveryFailed)
            #expect(waiting.map(\.id) == [retried] && waiting.first?.lastError == "Secret retry error")
            #expect(waiting.first?.endpoint == "http://peer.example/secret-path-token")
            #expect(setting == ["name": "Secret Setting Value"])
            #expect(record?.label == "Faber College Secret Label" && record?.invitation["label"] == "Invitation Label Secret")
            #expect(record?.invitationRoutingKeys == ["SecretFirstRecipientKey"] && record?.theirVerkey == "SecretTheirVerkey")
            #expect(record?.problemReport?["explain"] == "Secret problem explain" && record?.goal == "Secret goal text")
            #expect(byId?.id == connection && byDid?.id == connection)
            #expect(page.map(\.uid) == messages)
            #expect(page.allSatisfy { (try? $0.payload)?["content"] == "Basic message secret content" && $0.theirDid == "did:peer:2.SecretTheirDid" })
            #expect(page.allSatisfy { $0.threadId == "thread-secret-id" })
            #expect(stored.count == messages.count)
            #expect(stored.allSatisfy { $0?.senderVerkey == "SenderVerkeySecret" && $0?.threadId == "thread-secret-id" })
            #expect(found?.attachedMessage?["comment"] == "Attachment field secret" && found?.reuseMessageId == "reuse-1")
        }
        // Before the re-encryption: the clear rows read.
        for tenant in [alice, bob] { try await expectEverythingReads(tenant) }
        #expect(Set(try await runtime.tenantsWithClearRows(limit: 10)) == [alice.tenantID, bob.tenantID])

        // A first batch of one row per table for Alice (as if the server stopped there) ...
        #expect(try await alice.database.transaction { try $0.sealClearRows(limit: 1) } == 6)
        try await expectEverythingReads(alice)
        // ... then the service finishes, in batches of two.
        let contexts = TenantContexts(database: runtime, masterKeys: MasterKeyring(keys: [master], home: nil))
        var service = SealingMigrationService(database: runtime, contexts: contexts, logger: quiet)
        service.batchSize = 2
        #expect(try await service.sweep() == 2 * 9 - 6)
        #expect(try await runtime.tenantsWithClearRows(limit: 10).isEmpty)
        #expect(try await service.sweep() == 0)

        for tenant in [alice, bob] { try await expectEverythingReads(tenant) }
        let clearLeft = try await fixture.asSuperuser { session in
            try session.query(
                """
                SELECT (SELECT count(*) FROM aerie.connections
                        WHERE sealed IS NULL OR label IS NOT NULL OR invitation IS NOT NULL OR their_did IS NOT NULL)
                    + (SELECT count(*) FROM aerie.mailbox WHERE sealed IS NULL OR payload IS NOT NULL OR delivery_error IS NOT NULL)
                    + (SELECT count(*) FROM aerie.outbox WHERE last_error IS NOT NULL OR endpoint IS NOT NULL)
                    + (SELECT count(*) FROM aerie.tenants WHERE label IS NOT NULL OR label_sealed IS NULL)
                    + (SELECT count(*) FROM aerie.oob_invitations WHERE sealed IS NULL OR invitation IS NOT NULL)
                    + (SELECT count(*) FROM aerie.tenant_settings WHERE sealed IS NULL OR value IS NOT NULL)
                """
            ).int(0, 0)
        }
        #expect(clearLeft == 0)
        Self.expectNoSecrets(Self.secrets + labels.values, in: try await Self.everyRow(fixture), "a superuser's SELECT after the upgrade")
        // The conversion kept the connection's own times.
        let updated = try await fixture.asSuperuser { session in
            try session.query("SELECT count(*) FROM aerie.connections WHERE updated_at > created_at + interval '1 second'").int(0, 0)
        }
        #expect(updated == 0)
    }
}
