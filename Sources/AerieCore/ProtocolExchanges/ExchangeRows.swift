import Foundation

/// The reads every protocol exchange table shares (`aerie.<table>` keyed by tenant and id, with
/// `connection_id`, `state`, `created_at` and a keyed `thread_hash`): get, find by thread, a page
/// in creation order after a cursor, and delete a connection's rows. The owning store names the
/// table, its selected columns and how one row becomes a record.
package struct ExchangeRows<Record> {
    let table: String
    let columns: String
    let tenantID: TenantID
    let sql: any TenantSQL
    let record: (any SQLRows, Int) throws -> Record

    package init(
        table: String, columns: String, tenantID: TenantID, sql: any TenantSQL,
        record: @escaping (any SQLRows, Int) throws -> Record
    ) {
        self.table = table
        self.columns = columns
        self.tenantID = tenantID
        self.sql = sql
        self.record = record
    }

    package func get(_ id: UUID, forUpdate: Bool) throws -> Record? {
        let result = try sql.query(
            "SELECT \(columns) FROM aerie.\(table) WHERE tenant_id = $1::uuid AND id = $2::uuid\(forUpdate ? " FOR UPDATE" : "")",
            [.text(tenantID.rawValue), .uuid(id)])
        return result.rowCount == 1 ? try record(result, 0) : nil
    }

    package func find(threadHash: [UInt8], connectionId: UUID?, forUpdate: Bool) throws -> Record? {
        let result = try sql.query(
            """
            SELECT \(columns) FROM aerie.\(table)
            WHERE tenant_id = $1::uuid AND thread_hash = $2 AND connection_id IS NOT DISTINCT FROM $3::uuid
            \(forUpdate ? "FOR UPDATE" : "")
            """,
            [.text(tenantID.rawValue), .bytes(threadHash), .optionalUUID(connectionId)])
        return result.rowCount >= 1 ? try record(result, 0) : nil
    }

    /// At most `limit` (clamped to 0...`maxPage`) rows in `state`, if given, created after the row `after`.
    package func list(state: String?, after: UUID?, limit: Int, maxPage: Int) throws -> [Record] {
        var conditions = ["tenant_id = $1::uuid"]
        var parameters: [SQLValue] = [.text(tenantID.rawValue), .int(min(max(limit, 0), maxPage))]
        if let state {
            parameters.append(.text(state))
            conditions.append("state = $\(parameters.count)")
        }
        if let after {
            parameters.append(.uuid(after))
            conditions.append(
                "(created_at, id) > (SELECT created_at, id FROM aerie.\(table) WHERE tenant_id = $1::uuid AND id = $\(parameters.count)::uuid)"
            )
        }
        let result = try sql.query(
            """
            SELECT \(columns) FROM aerie.\(table) WHERE \(conditions.joined(separator: " AND "))
            ORDER BY created_at, id LIMIT $2::int4
            """, parameters)
        return try (0..<result.rowCount).map { try record(result, $0) }
    }

    /// Refuses (`OpenExchangeLimits.exceeded`) one more open exchange on `connectionId` when the
    /// connection or the tenant already has `limits`' worth; `noun` names the exchange in the
    /// message. A transaction-level advisory lock per tenant and table comes first, so two
    /// concurrent opens cannot both pass; the counts read after it (a new snapshot: READ
    /// COMMITTED) and stop at the limit, served by the table's index of open rows.
    package func checkRoom(connectionId: UUID, limits: OpenExchangeLimits, noun: String) throws {
        _ = try sql.query(
            "SELECT pg_advisory_xact_lock(hashtextextended('aerie.open_exchanges:' || $2 || ':' || $1, 0))",
            [.text(tenantID.rawValue), .text(table)])
        let open = "state NOT IN ('done', 'abandoned')"
        let counts = try sql.query(
            """
            SELECT (SELECT count(*) FROM (SELECT 1 FROM aerie.\(table)
                        WHERE tenant_id = $1::uuid AND connection_id = $2::uuid AND \(open) LIMIT $3::int4) c)::int8,
                   (SELECT count(*) FROM (SELECT 1 FROM aerie.\(table) WHERE tenant_id = $1::uuid AND \(open) LIMIT $4::int4) t)::int8
            """,
            [.text(tenantID.rawValue), .uuid(connectionId), .int(limits.perConnection), .int(limits.perTenant)])
        if (counts.int(0, 0) ?? 0) >= limits.perConnection {
            throw OpenExchangeLimits.exceeded(
                noun, limit: limits.perConnection, scope: "connection", variable: "AERIE_OPEN_EXCHANGES_PER_CONNECTION")
        }
        if (counts.int(0, 1) ?? 0) >= limits.perTenant {
            throw OpenExchangeLimits.exceeded(noun, limit: limits.perTenant, scope: "tenant", variable: "AERIE_OPEN_EXCHANGES_PER_TENANT")
        }
    }

    package func deleteAll(connectionId: UUID) throws -> Int {
        try sql.execute(
            "DELETE FROM aerie.\(table) WHERE tenant_id = $1::uuid AND connection_id = $2::uuid",
            [.text(tenantID.rawValue), .uuid(connectionId)])
    }
}
