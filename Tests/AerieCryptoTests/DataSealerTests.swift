import AerieCore
import Testing

@testable import AerieCrypto

/// The one sealing seam for stored values: round trip, binding to (tenant, table, column, row),
/// tampering, format byte, keyed lookup hashes.
@Suite(.timeLimit(.minutes(5))) struct DataSealerTests {
    let tenant = TenantID.random()
    let key = DataKey.generate()

    @Test func sealedValueOpensOnlyWhereItWasSealed() throws {
        let sealer = DataSealer(dataKey: key, tenantID: tenant)
        let plain = Array("Alice Example, born 1990-01-01".utf8)
        let sealed = sealer.seal(plain, table: "mailbox", column: "sealed", row: "row-1")
        #expect(sealed.count == plain.count + DataSealer.overhead)
        #expect(sealed[0] == DataSealer.formatVersion)
        #expect(!Self.contains(sealed, Array("Alice".utf8)))
        #expect(try sealer.open(sealed, table: "mailbox", column: "sealed", row: "row-1") == plain)
        // A fresh sealer of the same key (the next transaction) opens it too: the subkeys are derived.
        #expect(try DataSealer(dataKey: key, tenantID: tenant).open(sealed, table: "mailbox", column: "sealed", row: "row-1") == plain)
        // Random nonces: sealing twice gives two ciphertexts.
        #expect(sealer.seal(plain, table: "mailbox", column: "sealed", row: "row-1") != sealed)

        for (table, column, row) in [("mailbox", "sealed", "row-2"), ("mailbox", "other", "row-1"), ("connections", "sealed", "row-1")] {
            let error = #expect(throws: AerieError.self) { try sealer.open(sealed, table: table, column: column, row: row) }
            #expect(error?.code == .internalError)
            #expect(String(reflecting: error!).contains("does not open"), "\(String(reflecting: error!))")
        }
        // Another tenant, with its own key or even (by mistake) the same key: no.
        let other = TenantID.random()
        #expect(throws: AerieError.self) {
            try DataSealer(dataKey: .generate(), tenantID: other).open(sealed, table: "mailbox", column: "sealed", row: "row-1")
        }
        #expect(throws: AerieError.self) {
            try DataSealer(dataKey: key, tenantID: other).open(sealed, table: "mailbox", column: "sealed", row: "row-1")
        }
    }

    @Test func tamperedTruncatedOrUnknownFormatIsRefused() throws {
        let sealer = DataSealer(dataKey: key, tenantID: tenant)
        let sealed = sealer.seal(Array("x".utf8), table: "t", column: "c", row: "r")
        for index in [0, 1, 25, sealed.count - 1] {
            var bad = sealed
            bad[index] ^= 0x01
            #expect(throws: AerieError.self) { try sealer.open(bad, table: "t", column: "c", row: "r") }
        }
        #expect(throws: AerieError.self) { try sealer.open(Array(sealed.prefix(DataSealer.overhead - 1)), table: "t", column: "c", row: "r") }
        #expect(throws: AerieError.self) { try sealer.open([], table: "t", column: "c", row: "r") }
        // The empty value seals and opens.
        #expect(try sealer.open(sealer.seal([], table: "t", column: "c", row: "r"), table: "t", column: "c", row: "r") == [])
    }

    /// Length-prefixed fields: moving bytes between table, column and row names changes the AD.
    @Test func placeFieldsCannotBeShiftedIntoEachOther() throws {
        let sealer = DataSealer(dataKey: key, tenantID: tenant)
        let sealed = sealer.seal(Array("v".utf8), table: "ab", column: "c", row: "r")
        #expect(throws: AerieError.self) { try sealer.open(sealed, table: "a", column: "bc", row: "r") }
    }

    @Test func lookupHashesAreKeyedPerTenantAndColumn() {
        let sealer = DataSealer(dataKey: key, tenantID: tenant)
        let h = sealer.lookupHash("inv-1", table: "connections", column: "invitation_id")
        #expect(h.count == 32)
        #expect(DataSealer(dataKey: key, tenantID: tenant).lookupHash("inv-1", table: "connections", column: "invitation_id") == h)
        #expect(sealer.lookupHash("inv-2", table: "connections", column: "invitation_id") != h)
        #expect(sealer.lookupHash("inv-1", table: "connections", column: "public_did") != h)
        #expect(sealer.lookupHash("inv-1", table: "oob_invitations", column: "invitation_id") != h)
        #expect(DataSealer(dataKey: .generate(), tenantID: tenant).lookupHash("inv-1", table: "connections", column: "invitation_id") != h)
        // Not the unkeyed hash: without the data key nobody can test a guess.
        #expect(BLAKE2b.hash(Array("inv-1".utf8)) != h)
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }

    @Test func sealerNeverPrintsItsKeys() {
        let sealer = DataSealer(dataKey: key, tenantID: tenant)
        #expect("\(sealer)" == "DataSealer(\(tenant), <redacted>)")
        #expect(String(reflecting: sealer) == "DataSealer(\(tenant), <redacted>)")
        #expect(key.sealer(for: tenant).tenantID == tenant)
    }
}
