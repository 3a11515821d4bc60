import AerieCore

/// Seals a tenant's stored values (not its private keys: `DataKey.seal` does those) and hashes
/// its lookup keys. Made once per transaction from the tenant's data key: the two subkeys are
/// derived here (keyed BLAKE2b of a fixed label), so rows cost one AEAD call each, no KDF.
///
/// Sealed form: `0x01 || nonce(24) || XChaCha20-Poly1305(plaintext) || tag(16)`, the associated
/// data binding the format byte, tenant id, table, column and row (each length-prefixed), so a
/// value moved to another row, column or tenant, or sealed by another tenant's key, does not
/// open. The first byte names the format so a later one can be told apart.
/// Lookup hash: BLAKE2b-256 keyed with the lookup subkey over (table, column, value), so equal
/// values in two tenants (or two columns) give unrelated hashes.
public final class DataSealer: ValueSealer, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public static let formatVersion: UInt8 = 1
    static let nonceByteCount = 24
    /// Bytes a sealed value adds to its plaintext.
    public static let overhead = 1 + nonceByteCount + AEAD.tagByteCount

    public let tenantID: TenantID
    private let sealKey: SecretBytes
    private let lookupKey: SecretBytes

    public init(dataKey: DataKey, tenantID: TenantID) {
        self.tenantID = tenantID
        self.sealKey = Self.subkey(of: dataKey, label: "aerie/data-seal/v1")
        self.lookupKey = Self.subkey(of: dataKey, label: "aerie/lookup-hash/v1")
    }

    public func seal(_ plaintext: [UInt8], table: String, column: String, row: String) -> [UInt8] {
        let nonce = AEAD.xchacha20Poly1305.randomNonce()
        let ad = associatedData(table: table, column: column, row: row)
        let (ciphertext, tag) = sealKey.withUnsafeBytes { k in
            plaintext.withUnsafeBytes { m in
                nonce.withUnsafeBytes { n in
                    ad.withUnsafeBytes { AEAD.xchacha20Poly1305.sealDetached(m, key: k, nonce: n, aad: $0) }
                }
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(Self.overhead + plaintext.count)
        out.append(Self.formatVersion)
        out += nonce
        out += ciphertext
        out += tag
        return out
    }

    public func open(_ sealed: [UInt8], table: String, column: String, row: String) throws -> [UInt8] {
        // Only for errors: built on the way out, not per row.
        func place() -> String { "aerie.\(table).\(column) of row \(row)" }
        guard sealed.count >= Self.overhead else {
            throw AerieError.internalError(details: "the sealed value of \(place()) is too short (\(sealed.count) bytes)")
        }
        guard sealed[0] == Self.formatVersion else {
            throw AerieError.internalError(details: "the sealed value of \(place()) has unknown format \(sealed[0])")
        }
        let ad = associatedData(table: table, column: column, row: row)
        let header = 1 + Self.nonceByteCount
        let tagStart = sealed.count - AEAD.tagByteCount
        do {
            return try sealed.withUnsafeBytes { raw in
                try sealKey.withUnsafeBytes { k in
                    try ad.withUnsafeBytes { adp in
                        try AEAD.xchacha20Poly1305.openDetached(
                            UnsafeRawBufferPointer(rebasing: raw[header..<tagStart]),
                            tag: UnsafeRawBufferPointer(rebasing: raw[tagStart...]), key: k,
                            nonce: UnsafeRawBufferPointer(rebasing: raw[1..<header]), aad: adp)
                    }
                }
            }
        } catch {
            throw AerieError.internalError(
                details: "the sealed value of \(place()) does not open for tenant \(tenantID) "
                    + "(sealed for another row, column or tenant, or altered)")
        }
    }

    public func lookupHash(_ value: String, table: String, column: String) -> [UInt8] {
        var input = [UInt8]()
        Self.appendField(table, to: &input)
        Self.appendField(column, to: &input)
        input += value.utf8
        return lookupKey.withUnsafeBytes { key in input.withUnsafeBytes { BLAKE2b.hash($0, outputCount: 32, key: key) } }
    }

    private func associatedData(table: String, column: String, row: String) -> [UInt8] {
        var ad: [UInt8] = [Self.formatVersion]
        ad.reserveCapacity(64 + table.utf8.count + column.utf8.count + row.utf8.count)
        Self.appendField(tenantID.rawValue, to: &ad)
        Self.appendField(table, to: &ad)
        Self.appendField(column, to: &ad)
        Self.appendField(row, to: &ad)
        return ad
    }

    /// Length-prefixed (4 bytes, big-endian), so no two (table, column, row) give the same bytes.
    /// The string's UTF-8 appended as it is (no array of its own: the associated data is built
    /// once per row opened).
    private static func appendField(_ string: String, to out: inout [UInt8]) {
        let n = UInt32(string.utf8.count)
        out.append(UInt8(n >> 24))
        out.append(UInt8((n >> 16) & 0xff))
        out.append(UInt8((n >> 8) & 0xff))
        out.append(UInt8(n & 0xff))
        // A native string's bytes in one copy; the view's element-wise append was most of the
        // associated data's cost (built once per row opened: 100 per download page).
        if string.utf8.withContiguousStorageIfAvailable({ out.append(contentsOf: $0) }) == nil {
            out.append(contentsOf: string.utf8)
        }
    }

    private static func subkey(of dataKey: DataKey, label: String) -> SecretBytes {
        SecretBytes(count: 32) { out in
            var digest = dataKey.secret.withUnsafeBytes { key in
                Array(label.utf8).withUnsafeBytes { BLAKE2b.hash($0, outputCount: 32, key: key) }
            }
            digest.withUnsafeBytes { out.copyMemory(from: $0) }
            SecretBytes.wipe(&digest)
        }
    }

    public var description: String { "DataSealer(\(tenantID), <redacted>)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["tenantID": tenantID.rawValue]) }
}
