import AerieCore
import AerieCrypto
import Foundation

/// `aerie.stored_credentials` (`IssueCredentialSchema`): the `CredentialRepository` of AerieCore.
/// Sealed: the credential and what is read from it. Clear: ids, connection, exchange, creation
/// time, and keyed hashes of the issuer and of each type for the listing's filters.
struct CredentialStore: CredentialRepository {
    static let table = "stored_credentials"
    /// Most credentials one listing answers.
    static let maxPage = 500

    let tenantID: TenantID
    let sql: any TenantSQL
    let sealing: RowSealing

    init(_ transaction: any TenantTransaction) {
        tenantID = transaction.tenantID
        sql = transaction.sql
        sealing = transaction.rowSealing(Self.table)
    }

    private static let columns = """
        id::text, connection_id::text, exchange_id::text, (extract(epoch FROM created_at) * 1000000)::int8, sealed
        """

    func insert(_ c: StoredCredential) throws {
        let id = c.id.lowercasedString
        let sealed: [String: JSONValue] = [
            "credential": c.credential, "issuer": .string(c.issuer), "types": .array(c.types.map(JSONValue.string)),
            "subjectId": .optional(c.subjectId), "issuanceDate": .optional(c.issuanceDate?.iso8601Text),
            "expirationDate": .optional(c.expirationDate?.iso8601Text),
        ]
        try sql.execute(
            """
            INSERT INTO aerie.stored_credentials (tenant_id, id, connection_id, exchange_id, issuer_hash, type_hashes, sealed, created_at)
            VALUES ($1::uuid, $2::uuid, $3::uuid, $4::uuid, $5, $6::text[], $7, to_timestamp($8::float8))
            """,
            [
                .text(tenantID.rawValue), .text(id), .optionalUUID(c.connectionId), .optionalUUID(c.exchangeId),
                .bytes(try issuerHash(c.issuer)), .textArray(try c.types.map(typeHash)),
                .bytes(try sealing.seal(sealed, row: id)), .text(String(c.createdAt.timeIntervalSince1970)),
            ])
    }

    func get(_ id: UUID) throws -> StoredCredential? {
        let result = try sql.query(
            "SELECT \(Self.columns) FROM aerie.stored_credentials WHERE tenant_id = $1::uuid AND id = $2::uuid",
            [.text(tenantID.rawValue), .uuid(id)])
        return result.rowCount == 1 ? try credential(result, 0) : nil
    }

    func list(_ filter: CredentialFilter, after: UUID?, limit: Int) throws -> [StoredCredential] {
        var conditions = ["tenant_id = $1::uuid"]
        var parameters: [SQLValue] = [.text(tenantID.rawValue), .int(min(max(limit, 0), Self.maxPage))]
        if let after {
            parameters.append(.uuid(after))
            conditions.append(
                "(created_at, id) > (SELECT created_at, id FROM aerie.stored_credentials WHERE tenant_id = $1::uuid AND id = $\(parameters.count)::uuid)"
            )
        }
        if let issuer = filter.issuer {
            parameters.append(.bytes(try issuerHash(issuer)))
            conditions.append("issuer_hash = $\(parameters.count)")
        }
        if !filter.types.isEmpty {
            parameters.append(.textArray(try filter.types.map(typeHash)))
            conditions.append("type_hashes @> $\(parameters.count)::text[]")
        }
        let result = try sql.query(
            """
            SELECT \(Self.columns) FROM aerie.stored_credentials WHERE \(conditions.joined(separator: " AND "))
            ORDER BY created_at, id LIMIT $2::int4
            """, parameters)
        return try (0..<result.rowCount).map { try credential(result, $0) }
    }

    func delete(_ id: UUID) throws -> Bool {
        try sql.execute(
            "DELETE FROM aerie.stored_credentials WHERE tenant_id = $1::uuid AND id = $2::uuid", [.text(tenantID.rawValue), .uuid(id)]) == 1
    }

    /// Forgets which connection the credentials of `connectionId` came over (it is being deleted).
    @discardableResult
    func unlink(connectionId: UUID) throws -> Int {
        try sql.execute(
            "UPDATE aerie.stored_credentials SET connection_id = NULL WHERE tenant_id = $1::uuid AND connection_id = $2::uuid",
            [.text(tenantID.rawValue), .uuid(connectionId)])
    }

    private func issuerHash(_ issuer: String) throws -> [UInt8] {
        try sealing.hash(issuer, column: "issuer") ?? []
    }

    private func typeHash(_ type: String) throws -> String {
        Hex.encode(try sealing.hash(type, column: "type") ?? [])
    }

    private func credential(_ r: any SQLRows, _ row: Int) throws -> StoredCredential {
        guard let idText = r.string(row, 0), let id = UUID(text: idText), let createdAt = r.date(microseconds: row, 3),
            let sealed = r.bytes(row, 4)
        else { throw AerieError.internalError(details: "malformed row in aerie.stored_credentials") }
        let f = try sealing.open(sealed, row: idText)
        guard let credential = f.json("credential"), let issuer = f.string("issuer") else {
            throw AerieError.internalError(details: "sealed row \(idText) of aerie.stored_credentials lacks its credential")
        }
        let date = { (name: String) in f.string(name).flatMap { CredentialContent.date(.object(["d": .string($0)]), "d") } }
        return StoredCredential(
            id: id, credential: credential, issuer: issuer, types: try f.strings("types"), subjectId: f.string("subjectId"),
            issuanceDate: date("issuanceDate"), expirationDate: date("expirationDate"), connectionId: r.uuid(row, 1),
            exchangeId: r.uuid(row, 2), createdAt: createdAt)
    }
}
