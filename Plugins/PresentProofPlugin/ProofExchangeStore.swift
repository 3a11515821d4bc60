import AerieCore
import AerieCrypto
import Foundation

/// `aerie.proof_exchanges` (`PresentProofSchema`). Sealed: the thread ids, comment, definition,
/// challenge, domain, suite, what was presented, holder DID, problem. Clear: ids, connection,
/// state, times, and the thread's keyed hash (unique per connection).
struct ProofExchangeStore: ProofExchangeRepository {
    static let table = "proof_exchanges"
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
        id::text, connection_id::text, state, sealed, (extract(epoch FROM created_at) * 1000000)::int8,
        (extract(epoch FROM updated_at) * 1000000)::int8
        """

    func insert(_ e: ProofExchange) throws {
        try sql.execute(
            """
            INSERT INTO aerie.proof_exchanges (tenant_id, id, connection_id, thread_hash, state, sealed)
            VALUES ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6)
            """, try parameters(e))
    }

    func update(_ e: ProofExchange) throws -> Bool {
        try sql.execute(
            """
            UPDATE aerie.proof_exchanges SET connection_id = $3::uuid, thread_hash = $4, state = $5, sealed = $6, updated_at = now()
            WHERE tenant_id = $1::uuid AND id = $2::uuid
            """, try parameters(e)) == 1
    }

    private var rows: ExchangeRows<ProofExchange> {
        ExchangeRows(table: Self.table, columns: Self.columns, tenantID: tenantID, sql: sql, record: exchange)
    }

    func get(_ id: UUID, forUpdate: Bool) throws -> ProofExchange? {
        try rows.get(id, forUpdate: forUpdate)
    }

    func find(threadId: String, connectionId: UUID?, forUpdate: Bool) throws -> ProofExchange? {
        try rows.find(threadHash: try hash(threadId), connectionId: connectionId, forUpdate: forUpdate)
    }

    func list(state: ProofExchange.State?, after: UUID?, limit: Int) throws -> [ProofExchange] {
        try rows.list(state: state?.rawValue, after: after, limit: limit, maxPage: Self.maxPage)
    }

    func checkRoom(connectionId: UUID, limits: OpenExchangeLimits) throws {
        try rows.checkRoom(connectionId: connectionId, limits: limits, noun: "proof request")
    }

    func deleteAll(connectionId: UUID) throws -> Int {
        try rows.deleteAll(connectionId: connectionId)
    }

    private func hash(_ threadId: String) throws -> [UInt8] {
        try sealing.hash(threadId, column: "thread_id") ?? []
    }

    private func parameters(_ e: ProofExchange) throws -> [SQLValue] {
        let id = e.id.lowercasedString
        let sealed: [String: JSONValue] = [
            "threadId": .string(e.threadId), "parentThreadId": .optional(e.parentThreadId), "comment": .optional(e.comment),
            "definition": e.definition, "challenge": .string(e.challenge), "domain": .optional(e.domain),
            "suite": .string(e.suite.rawValue),
            "presented": .object(e.presented.mapValues { .string($0.lowercasedString) }),
            "holderDid": .optional(e.holderDid), "problem": .optional(e.problem),
        ]
        return [
            .text(tenantID.rawValue), .text(id), .optionalUUID(e.connectionId), .bytes(try hash(e.threadId)),
            .text(e.state.rawValue), .bytes(try sealing.seal(sealed, row: id)),
        ]
    }

    private func exchange(_ r: any SQLRows, _ row: Int) throws -> ProofExchange {
        guard let idText = r.string(row, 0), let id = UUID(text: idText),
            let state = r.string(row, 2).flatMap(ProofExchange.State.init(rawValue:)), let sealed = r.bytes(row, 3),
            let createdAt = r.date(microseconds: row, 4), let updatedAt = r.date(microseconds: row, 5)
        else { throw AerieError.internalError(details: "malformed row in aerie.proof_exchanges") }
        let f = try sealing.open(sealed, row: idText)
        guard let threadId = f.string("threadId"), let challenge = f.string("challenge"), let definition = f.json("definition"),
            let suite = f.string("suite").flatMap(ProofSuite.init(rawValue:))
        else {
            throw AerieError.internalError(details: "sealed row \(idText) of aerie.proof_exchanges is incomplete")
        }
        var presented: [String: UUID] = [:]
        if case .object(let pairs)? = f.json("presented") {
            for (descriptor, value) in pairs { if let credential = value.stringValue.flatMap(UUID.init(text:)) { presented[descriptor] = credential } }
        }
        return ProofExchange(
            id: id, connectionId: r.uuid(row, 1), threadId: threadId, parentThreadId: f.string("parentThreadId"), state: state,
            comment: f.string("comment"), definition: definition, challenge: challenge, domain: f.string("domain"), suite: suite,
            presented: presented, holderDid: f.string("holderDid"), problem: f.string("problem"), createdAt: createdAt,
            updatedAt: updatedAt)
    }
}
