import AerieCore
import Foundation

/// `aerie.credential_exchanges` (`IssueCredentialSchema`). Sealed: the thread ids, comment,
/// offered and requested details, holder DID, problem. Clear: ids, connection, state, credential
/// id, times, and the thread's keyed hash (unique per connection).
struct CredentialExchangeStore: CredentialExchangeRepository {
    static let table = "credential_exchanges"
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
        id::text, connection_id::text, state, credential_id::text, sealed, (extract(epoch FROM created_at) * 1000000)::int8,
        (extract(epoch FROM updated_at) * 1000000)::int8
        """

    func insert(_ e: CredentialExchange) throws {
        try sql.execute(
            """
            INSERT INTO aerie.credential_exchanges (tenant_id, id, connection_id, thread_hash, state, credential_id, sealed)
            VALUES ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6::uuid, $7)
            """, try parameters(e))
    }

    func update(_ e: CredentialExchange) throws -> Bool {
        try sql.execute(
            """
            UPDATE aerie.credential_exchanges SET connection_id = $3::uuid, thread_hash = $4, state = $5, credential_id = $6::uuid,
                sealed = $7, updated_at = now()
            WHERE tenant_id = $1::uuid AND id = $2::uuid
            """, try parameters(e)) == 1
    }

    private var rows: ExchangeRows<CredentialExchange> {
        ExchangeRows(table: Self.table, columns: Self.columns, tenantID: tenantID, sql: sql, record: exchange)
    }

    func get(_ id: UUID, forUpdate: Bool) throws -> CredentialExchange? {
        try rows.get(id, forUpdate: forUpdate)
    }

    func find(threadId: String, connectionId: UUID?, forUpdate: Bool) throws -> CredentialExchange? {
        try rows.find(threadHash: try hash(threadId), connectionId: connectionId, forUpdate: forUpdate)
    }

    func list(state: CredentialExchange.State?, after: UUID?, limit: Int) throws -> [CredentialExchange] {
        try rows.list(state: state?.rawValue, after: after, limit: limit, maxPage: Self.maxPage)
    }

    func checkRoom(connectionId: UUID, limits: OpenExchangeLimits) throws {
        try rows.checkRoom(connectionId: connectionId, limits: limits, noun: "credential exchange")
    }

    func delete(_ id: UUID) throws -> Bool {
        try sql.execute(
            "DELETE FROM aerie.credential_exchanges WHERE tenant_id = $1::uuid AND id = $2::uuid",
            [.text(tenantID.rawValue), .uuid(id)]) == 1
    }

    func deleteAll(connectionId: UUID) throws -> Int {
        try rows.deleteAll(connectionId: connectionId)
    }

    private func hash(_ threadId: String) throws -> [UInt8] {
        try sealing.hash(threadId, column: "thread_id") ?? []
    }

    private func parameters(_ e: CredentialExchange) throws -> [SQLValue] {
        let id = e.id.lowercasedString
        let sealed: [String: JSONValue] = [
            "threadId": .string(e.threadId), "parentThreadId": .optional(e.parentThreadId), "comment": .optional(e.comment),
            "offer": e.offer?.json ?? .null, "request": e.request?.json ?? .null, "holderDid": .optional(e.holderDid),
            "problem": .optional(e.problem),
        ]
        return [
            .text(tenantID.rawValue), .text(id), .optionalUUID(e.connectionId), .bytes(try hash(e.threadId)),
            .text(e.state.rawValue), .optionalUUID(e.credentialId), .bytes(try sealing.seal(sealed, row: id)),
        ]
    }

    private func exchange(_ r: any SQLRows, _ row: Int) throws -> CredentialExchange {
        guard let idText = r.string(row, 0), let id = UUID(text: idText),
            let state = r.string(row, 2).flatMap(CredentialExchange.State.init(rawValue:)), let sealed = r.bytes(row, 4),
            let createdAt = r.date(microseconds: row, 5), let updatedAt = r.date(microseconds: row, 6)
        else { throw AerieError.internalError(details: "malformed row in aerie.credential_exchanges") }
        let f = try sealing.open(sealed, row: idText)
        guard let threadId = f.string("threadId") else {
            throw AerieError.internalError(details: "sealed row \(idText) of aerie.credential_exchanges has no thread")
        }
        let detail = { (name: String) throws -> IssueCredentialMessages.CredentialDetail? in
            guard let value = f.json(name), let credential = value["credential"], let options = value["options"] else { return nil }
            return IssueCredentialMessages.CredentialDetail(credential: credential, options: options)
        }
        return CredentialExchange(
            id: id, connectionId: r.uuid(row, 1), threadId: threadId, parentThreadId: f.string("parentThreadId"), state: state,
            comment: f.string("comment"), offer: try detail("offer"), request: try detail("request"),
            holderDid: f.string("holderDid"), credentialId: r.uuid(row, 3), problem: f.string("problem"), createdAt: createdAt,
            updatedAt: updatedAt)
    }
}
