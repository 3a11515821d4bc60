import AerieCore
import AerieCrypto
import AerieStore
import AerieTesting
import Foundation
import Testing

/// The tenant key wallet on a real PostgreSQL: what it does, that tenants never reach each
/// other's keys, and that the database only ever holds sealed keys.
@Suite(.timeLimit(.minutes(10))) struct KeyWalletTests {
    @Test func createListSignVerifyPackUnpackAndDelete() async throws {
        try await WalletFixture.with { fixture in
            let alice = try await fixture.createTenant("alice").keys
            let seed = Random.bytes(32)
            let seeded = try await alice.createKey(seed: seed)
            #expect(seeded == (try Ed25519KeyPair(seed: seed)).verkeyBase58)
            let random = try await alice.createKey()
            #expect(try await alice.list().map(\.verkey) == [seeded, random].sorted())
            #expect(try await alice.list(limit: 1).count == 1)
            #expect(try await alice.list(after: [seeded, random].min()).map(\.verkey) == [[seeded, random].max()!])
            let created = try #require(try await alice.list().first?.createdAt)
            #expect(abs(created.timeIntervalSinceNow) < 60)
            #expect(try await alice.holds(seeded))
            #expect(try await alice.holds(DIDKey.did(verkeyBase58: random)))

            // Sign and verify (base58 and did:key forms).
            let data = Array("hello".utf8)
            let signature = try await alice.sign(data, with: seeded)
            #expect(KeyWallet.verify(signature: signature, of: data, by: seeded))
            #expect(KeyWallet.verify(signature: signature, of: data, by: try DIDKey.did(verkeyBase58: seeded)))
            #expect(!KeyWallet.verify(signature: signature, of: Array("hellO".utf8), by: seeded))
            #expect(!KeyWallet.verify(signature: signature, of: data, by: random))
            #expect(!KeyWallet.verify(signature: signature, of: data, by: "not a key"))
            #expect(signature == (try Ed25519KeyPair(seed: seed)).sign(data))

            // Authcrypt between two of its own keys, and anoncrypt.
            let message = Array(#"{"@type":"https://didcomm.org/basicmessage/1.0/message","content":"hi"}"#.utf8)
            let authcrypted = try await alice.pack(message, to: [random], from: seeded)
            let opened = try await alice.unpack(authcrypted)
            #expect(opened.plaintext == message)
            #expect(opened.senderVerkey == seeded)
            #expect(opened.recipientVerkey == random)
            #expect(opened.algorithm == .authcrypt)
            let anoncrypted = try await alice.unpack(try await alice.pack(message, to: [seeded], from: nil))
            #expect(anoncrypted.senderVerkey == nil && anoncrypted.recipientVerkey == seeded)

            // With an outside party holding its own key.
            let peer = Ed25519KeyPair.generate()
            let toPeer = try await alice.pack(message, to: [peer.verkeyBase58], from: seeded)
            let peerOpened = try DIDCommEnvelope(parsing: toPeer).open(with: peer)
            #expect(peerOpened.senderVerkey == seeded && peerOpened.plaintext == message)
            let fromPeer = try DIDCommEnvelope.pack(message, to: [peer.verkeyBase58, random], from: peer)
            let fromPeerOpened = try await alice.unpack(fromPeer)
            #expect(fromPeerOpened.senderVerkey == peer.verkeyBase58 && fromPeerOpened.recipientVerkey == random)

            // Errors.
            let unknown = Ed25519KeyPair.generate().verkeyBase58
            #expect((await thrownError { try await alice.sign(data, with: unknown) } as? AerieError)?.code == .notFound)
            #expect(
                (await thrownError { try await alice.pack(message, to: [unknown], from: unknown) } as? AerieError)?.code
                    == .notFound)
            #expect(
                (await thrownError { try await alice.sign(data, with: "not base58!") } as? CryptoError)?.code
                    == .invalidKey)
            let toStranger = try DIDCommEnvelope.pack(message, to: [unknown], from: peer)
            #expect(
                (await thrownError { try await alice.unpack(toStranger) } as? CryptoError)?.code == .unknownRecipient)
            #expect((await thrownError { try await alice.createKey(seed: seed) } as? AerieError)?.code == .conflict)
            #expect(
                (await thrownError { try await alice.createKey(seed: [1, 2, 3]) } as? CryptoError)?.code == .invalidKey)

            // Delete.
            #expect(try await alice.deleteKey(seeded))
            #expect(try await !alice.deleteKey(seeded))
            #expect(try await alice.list().map(\.verkey) == [random])
            #expect((await thrownError { try await alice.sign(data, with: seeded) } as? AerieError)?.code == .notFound)
            #expect(try await alice.unpack(authcrypted).recipientVerkey == random)  // the other key still opens it
        }
    }

    @Test func twoTenantsNeverReachEachOthersKeys() async throws {
        try await WalletFixture.with { fixture in
            let aliceContext = try await fixture.createTenant("alice")
            let bobContext = try await fixture.createTenant("bob")
            let alice = aliceContext.keys
            let bob = bobContext.keys
            let aliceSeed = Random.bytes(32)
            let aliceKey = try await alice.createKey(seed: aliceSeed)
            let bobKey = try await bob.createKey()

            #expect(try await bob.list().map(\.verkey) == [bobKey])
            #expect(try await alice.list().map(\.verkey) == [aliceKey])
            #expect(try await !bob.holds(aliceKey))
            #expect((await thrownError { try await bob.sign([1], with: aliceKey) } as? AerieError)?.code == .notFound)
            #expect(
                (await thrownError { try await bob.pack([1], to: [bobKey], from: aliceKey) } as? AerieError)?.code
                    == .notFound)
            #expect(try await !bob.deleteKey(aliceKey))
            #expect(try await alice.holds(aliceKey))

            // A message for Alice only does not open for Bob; one for both opens for each with its own key.
            let forAlice = try await bob.pack(Array("{}".utf8), to: [aliceKey], from: bobKey)
            #expect((await thrownError { try await bob.unpack(forAlice) } as? CryptoError)?.code == .unknownRecipient)
            #expect(try await alice.unpack(forAlice).senderVerkey == bobKey)
            let forBoth = try await alice.pack(Array("{}".utf8), to: [aliceKey, bobKey], from: nil)
            #expect(try await alice.unpack(forBoth).recipientVerkey == aliceKey)
            #expect(try await bob.unpack(forBoth).recipientVerkey == bobKey)

            // Bob cannot take over Alice's verkey, even knowing its seed (one owner per verkey).
            #expect((await thrownError { try await bob.createKey(seed: aliceSeed) } as? AerieError)?.code == .conflict)
            #expect(try await !bob.holds(aliceKey))

            // The inbound endpoint's lookup names the owner and reads that owner's key only.
            func owner(_ verkey: String) async throws -> InboundOwner? {
                try await fixture.runtime.tenants.inboundRecipient(
                    verkeys: [verkey], recent: true, sealer: { id, _ in DataKey.generate().sealer(for: id) })
            }
            #expect(try await owner(aliceKey)?.tenant == aliceContext.tenantID)
            #expect(try await owner(aliceKey)?.recipient?.verkey == aliceKey)
            #expect(try await owner(bobKey)?.tenant == bobContext.tenantID)
            #expect(try await owner(Ed25519KeyPair.generate().verkeyBase58) == nil)
            #expect(try await owner("'; DROP TABLE aerie.tenant_keys; --") == nil)

            // Raw SQL as the runtime role, tenant Bob set: row-level security hides Alice's row.
            let (visible, deleted) = try await fixture.runtime.withSession(tenant: bobContext.tenantID) { session in
                (
                    try session.query("SELECT verkey FROM aerie.tenant_keys").allRows(),
                    try session.execute("DELETE FROM aerie.tenant_keys WHERE verkey = $1", [.text(aliceKey)])
                )
            }
            #expect(visible == [[bobKey]])
            #expect(deleted == 0)
            // No UPDATE privilege at all: keys are never changed in place.
            let update = await thrownError {
                try await fixture.runtime.withSession(tenant: bobContext.tenantID) { session in
                    try session.execute("UPDATE aerie.tenant_keys SET sealed_secret = sealed_secret")
                }
            }
            #expect(String(reflecting: update.map { $0 as Any } ?? "").contains("permission denied"))
            let unscoped = try await fixture.runtime.withSession { session in
                try session.query("SELECT count(*) FROM aerie.tenant_keys").int(0, 0)
            }
            #expect(unscoped == 0)
            #expect(try await fixture.keyRows().count == 2)
        }
    }

    @Test func aSealedKeyMovedToAnotherTenantOrRowDoesNotOpen() async throws {
        try await WalletFixture.with { fixture in
            let aliceContext = try await fixture.createTenant("alice")
            let bobContext = try await fixture.createTenant("bob")
            let alice = aliceContext.keys
            let bob = bobContext.keys
            let stolen = try await alice.createKey()
            let aliceOther = try await alice.createKey()
            let bobOwn = try await bob.createKey()
            let bobID = bobContext.tenantID.rawValue

            // Alice's sealed row handed to Bob (as a superuser could): it does not open for Bob.
            _ = try await fixture.asSuperuser { session in
                try session.execute(
                    "UPDATE aerie.tenant_keys SET tenant_id = $1::uuid WHERE verkey = $2",
                    [.text(bobID), .text(stolen)])
            }
            #expect(try await bob.holds(stolen))
            let moved = await thrownError { try await bob.sign([1], with: stolen) } as? CryptoError
            #expect(moved?.code == .decryptionFailed)
            #expect(moved?.message.contains("does not open for this tenant") == true)
            let envelope = try DIDCommEnvelope.pack([1], to: [stolen], from: nil)
            #expect((await thrownError { try await bob.unpack(envelope) } as? CryptoError)?.code == .decryptionFailed)

            // Alice's sealed secret copied onto Bob's own row: does not open either.
            _ = try await fixture.asSuperuser { session in
                try session.execute(
                    """
                    UPDATE aerie.tenant_keys SET sealed_secret = (SELECT sealed_secret FROM aerie.tenant_keys WHERE verkey = $1)
                    WHERE verkey = $2
                    """, [.text(aliceOther), .text(bobOwn)])
            }
            #expect(
                (await thrownError { try await bob.sign([1], with: bobOwn) } as? CryptoError)?.code == .decryptionFailed
            )

            // Nor within one tenant: a key's sealed secret under another of its verkeys.
            let aliceThird = try await alice.createKey()
            _ = try await fixture.asSuperuser { session in
                try session.execute(
                    """
                    UPDATE aerie.tenant_keys SET sealed_secret = (SELECT sealed_secret FROM aerie.tenant_keys WHERE verkey = $1)
                    WHERE verkey = $2
                    """, [.text(aliceOther), .text(aliceThird)])
            }
            #expect(
                (await thrownError { try await alice.sign([1], with: aliceThird) } as? CryptoError)?.code
                    == .decryptionFailed)
            // The untouched key still works.
            let signature = try await alice.sign([1], with: aliceOther)
            #expect(KeyWallet.verify(signature: signature, of: [1], by: aliceOther))
        }
    }

    @Test func theDatabaseNeverHoldsAPrivateKeyInClear() async throws {
        try await WalletFixture.with { fixture in
            let alice = try await fixture.createTenant("alice").keys
            let bob = try await fixture.createTenant("bob").keys
            // Known seeds (random bytes and an Indy-style ASCII seed), so their forms can be searched for.
            let seeds = [Random.bytes(32), Random.bytes(32), Array("000000000000000000000000Steward1".utf8)]
            var verkeys: [String] = []
            for (index, seed) in seeds.enumerated() {
                verkeys.append(try await (index == 1 ? bob : alice).createKey(seed: seed))
            }
            for wallet in [alice, bob] { _ = try await wallet.createKey() }

            var forbidden: [String: String] = [:]
            for (index, seed) in seeds.enumerated() {
                let pair = try Ed25519KeyPair(seed: seed)
                let secretKey = seed + pair.verkey  // libsodium's 64-byte form
                for (name, bytes) in [("seed", seed), ("secret key", secretKey)] {
                    forbidden["\(name) \(index) hex"] = Hex.encode(bytes)
                    forbidden["\(name) \(index) HEX"] = Hex.encode(bytes).uppercased()
                    forbidden["\(name) \(index) base58"] = Base58.encode(bytes)
                    forbidden["\(name) \(index) base64"] = Base64.encode(bytes, padding: false)
                    forbidden["\(name) \(index) base64url"] = Base64.encodeURL(bytes)
                }
                if let text = String(bytes: seed, encoding: .ascii), seed.allSatisfy({ (0x20..<0x7f).contains($0) }) {
                    forbidden["seed \(index) text"] = text
                }
            }

            // Everything the superuser can read from the table, in text, hex and base64.
            let rows = try await fixture.asSuperuser { session in
                try session.query(
                    """
                    SELECT t::text, encode(sealed_secret, 'hex'), encode(sealed_secret, 'base64'),
                        encode(sealed_secret, 'escape')
                    FROM aerie.tenant_keys t
                    """
                ).allRows()
            }
            #expect(rows.count == 5)
            let selected = rows.flatMap { $0.compactMap { $0 } }.joined(separator: "\n").replacingOccurrences(
                of: "\n", with: "")
            // The raw bytes, wherever they would sit inside a sealed secret.
            let rawHits = try await fixture.asSuperuser { session in
                try seeds.map { seed in
                    try session.query(
                        "SELECT count(*) FROM aerie.tenant_keys WHERE position($1::bytea IN sealed_secret) > 0",
                        [.bytes(seed)]
                    ).int(0, 0)
                }
            }
            #expect(rawHits == [0, 0, 0])

            // And a real dump of the whole database, as a backup would hold it.
            let dump = try await pgDump(fixture.database.superuserConninfo)
            #expect(dump.contains("tenant_keys"))
            for verkey in verkeys { #expect(dump.contains(verkey), "the dump should hold the rows") }
            for (name, form) in forbidden {
                #expect(!selected.contains(form), "table contents contain \(name)")
                #expect(!dump.contains(form), "pg_dump output contains \(name)")
                #expect(
                    !dump.replacingOccurrences(of: "\n", with: "").contains(form), "pg_dump output contains \(name)")
            }
        }
    }

    /// `pg_dump` of the whole database (schema and data), as text.
    func pgDump(_ conninfo: String) async throws -> String {
        let candidates =
            ["/usr/bin/pg_dump", "/usr/local/bin/pg_dump"]
            + ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).sorted().reversed()
            .map {
                "/usr/lib/postgresql/\($0)/bin/pg_dump"
            }
        let path = try #require(
            candidates.first { FileManager.default.isExecutableFile(atPath: $0) }, "pg_dump not found")
        let result = try await runProcess(
            URL(fileURLWithPath: path), ["--dbname", conninfo, "--no-owner"],
            environment: ProcessInfo.processInfo.environment)
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout
    }
}
