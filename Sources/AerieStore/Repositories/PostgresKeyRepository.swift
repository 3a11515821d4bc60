import AerieCore

/// `aerie.tenant_keys`: sealed private keys, by verkey. Queries name the tenant too (primary-key
/// lookups); row-level security is what guarantees the isolation.
struct PostgresKeyRepository: TenantKeyRepository {
    let tenantID: TenantID
    let session: DatabaseSession
    /// Records the keys it stores and deletes (`RecentRecipients`).
    var made: MadeRecipients? = nil

    /// Most verkeys `sealedSecrets(verkeys:)` looks up at once (an envelope's recipient list is
    /// the peer's to choose).
    static let maxLookup = 100

    func insert(verkey: String, sealedSecret: [UInt8]) throws {
        try session.executeLater(
            "INSERT INTO aerie.tenant_keys (tenant_id, verkey, sealed_secret) VALUES ($1::uuid, $2, $3)",
            [.text(tenantID.rawValue), .text(verkey), .bytes(sealedSecret)]
        ) { error in
            // Same answer whether this tenant or another holds it.
            guard error.code == .conflict else { return error }
            var error = error
            error.message = "the key already exists"
            return error
        }
        made?.key(verkey, sealedSecret: sealedSecret)
    }

    func sealedSecret(verkey: String) throws -> [UInt8]? {
        let result = try session.query(
            "SELECT sealed_secret FROM aerie.tenant_keys WHERE tenant_id = $1::uuid AND verkey = $2",
            [.text(tenantID.rawValue), .text(verkey)])
        return result.rowCount == 1 ? result.bytes(0, 0) : nil
    }

    func sealedSecrets(verkeys: [String]) throws -> [String: [UInt8]] {
        guard !verkeys.isEmpty else { return [:] }
        guard verkeys.count <= Self.maxLookup else {
            throw AerieError.invalidParams(
                "too many keys to look up at once (at most \(Self.maxLookup))", field: "verkeys")
        }
        let result = try session.query(
            "SELECT verkey, sealed_secret FROM aerie.tenant_keys WHERE tenant_id = $1::uuid AND verkey = ANY($2::text[])",
            [.text(tenantID.rawValue), .textArray(verkeys)])
        var found: [String: [UInt8]] = [:]
        for row in 0..<result.rowCount {
            if let verkey = result.string(row, 0), let sealed = result.bytes(row, 1) { found[verkey] = sealed }
        }
        return found
    }

    /// Only the conditions given are in the statement (`SQLConditions`): a page starts at its
    /// cursor in the tenant's keys instead of reading every key before it.
    func list(after afterVerkey: String?, limit: Int) throws -> [StoredKey] {
        var conditions = SQLConditions(parameters: [.text(tenantID.rawValue)])
        conditions.add("tenant_id = $1::uuid")
        conditions.add(afterVerkey.map(SQLValue.text)) { "verkey > \($0)::text" }
        let limit = conditions.parameter(.int(max(0, limit)))
        let result = try session.query(
            """
            SELECT verkey, (extract(epoch FROM created_at) * 1000000)::int8 FROM aerie.tenant_keys
            \(conditions.whereClause) ORDER BY tenant_keys.verkey LIMIT \(limit)
            """,
            conditions.parameters)
        return try (0..<result.rowCount).map { row in
            guard let verkey = result.string(row, 0), let createdAt = result.date(microseconds: row, 1) else {
                throw AerieError.internalError(details: "malformed row in aerie.tenant_keys")
            }
            return StoredKey(verkey: verkey, createdAt: createdAt)
        }
    }

    func remove(verkey: String) throws -> Bool {
        made?.deletedKey(verkey)
        return try session.execute(
            "DELETE FROM aerie.tenant_keys WHERE tenant_id = $1::uuid AND verkey = $2",
            [.text(tenantID.rawValue), .text(verkey)]) == 1
    }
}
