import AerieCore
import AerieCrypto
import AerieStore
import Foundation
import Synchronization

/// The archive transfers running on this server, each owned by the session that started it and
/// ended with it (`onClose`): an export's store thread reads the tenant in one snapshot and
/// hands sealed pieces to the session's `exportChunk` calls; an import's store thread writes the
/// tenant in one transaction from the pieces the session's `import` calls hand it. At most
/// `maxTransfers` at once: each holds a database connection and, while it derives a passphrase's
/// key, 256 MiB.
final class TenantArchiveTransfers: Sendable {
    struct Transfer: Sendable {
        let session: UInt64
        let handoff: ArchiveHandoff
        let task: Task<ImportResult?, any Error>
    }

    /// What an import committed.
    struct ImportResult: Codable, Sendable {
        var tenantId: TenantID
        /// The new tenant token, shown once, when the tenant was imported under a new id (its
        /// old token stays with the tenant it was copied from); absent otherwise.
        var token: String?
        var archiveId: String
        /// Rows written per table.
        var rows: [String: Int]
    }

    static let maxTransfers = 2

    let database: AerieDatabase
    let masterKeys: MasterKeyring
    private let transfers = Mutex<[String: Transfer]>([:])

    init(database: AerieDatabase, masterKeys: MasterKeyring) {
        self.database = database
        self.masterKeys = masterKeys
    }

    /// Starts an export of `tenant` sealed to `sealing` for `session`; answers its id. The first
    /// piece taken is the archive's header.
    func startExport(_ tenant: TenantID, sealing: TenantArchive.Sealing, session: any SessionHandle) throws -> String {
        let handoff = ArchiveHandoff()
        let store = database.archives
        let masterKeys = self.masterKeys
        let id = UUID.random().lowercasedString
        let progress = ExportProgress()
        let task = Task<ImportResult?, any Error> {
            do {
                let found = try await store.export(
                    tenant,
                    begin: { row, tables in
                        let writer = try AerieError.mappingCrypto { try TenantArchiveWriter(sealedTo: sealing) }
                        let chunker = try TenantArchiveChunker(writer: writer, emit: handoff.blockingPut)
                        var key = try masterKeys.unwrap(row.wrappedDataKey, tenantID: tenant).archivedBytes()
                        defer { SecretBytes.wipe(&key) }
                        try chunker.append(TenantArchiveBody.manifest(tenant: tenant, dataKey: key, tenantRow: row.json, tables: tables))
                        progress.chunker = chunker
                    },
                    rows: { table, rows in
                        progress.counts[table, default: 0] += rows.count
                        try progress.chunker?.append(TenantArchiveBody.page(table: table, rows: rows))
                    })
                guard found, let chunker = progress.chunker else { throw AerieError.notFound("no tenant \(tenant)") }
                try chunker.append(TenantArchiveBody.end(counts: progress.counts))
                try chunker.finish()
                handoff.finish()
            } catch {
                handoff.close(with: Self.answer(error))
            }
            return nil
        }
        try register(id, Transfer(session: session.id, handoff: handoff, task: task), session: session)
        return id
    }

    /// The next piece of the export `id` (nil: the archive is complete).
    func nextPiece(_ id: String, session: any SessionHandle) async throws -> [UInt8]? {
        let transfer = try owned(id, session: session)
        do {
            let piece = try await transfer.handoff.take()
            if piece == nil { end(id) }
            return piece
        } catch {
            end(id)
            throw error
        }
    }

    /// Starts an import opened by `opening` for `session`; answers its id. `backend` owns the
    /// imported tenant (nil: none); `newID`: a tenant id taken here is replaced by a fresh one
    /// (else refused).
    func startImport(opening: TenantArchive.Opening, backend: BackendID?, newID: Bool, session: any SessionHandle) throws -> String {
        let handoff = ArchiveHandoff()
        let store = database.archives
        let masterKeys = self.masterKeys
        let sealedTables = database.sealedTables
        let id = UUID.random().lowercasedString
        let task = Task<ImportResult?, any Error> {
            do {
                let result = try await store.importTenant { writer in
                    try Self.write(
                        from: handoff, opening: opening,
                        as: ImportTarget(backend: backend, newID: newID, masterKeys: masterKeys, sealedTables: sealedTables), into: writer)
                }
                return result
            } catch {
                let answer = Self.answer(error)
                handoff.close(with: answer)
                throw answer
            }
        }
        try register(id, Transfer(session: session.id, handoff: handoff, task: task), session: session)
        return id
    }

    /// Hands `data` to the import `id`; `final`: that was all of it, so wait for the commit and
    /// answer what was imported.
    func importPiece(_ id: String, data: [UInt8], final: Bool, session: any SessionHandle) async throws -> ImportResult? {
        let transfer = try owned(id, session: session)
        do {
            if !data.isEmpty { try await transfer.handoff.put(data) }
            guard final else { return nil }
            transfer.handoff.finish()
            defer { end(id) }
            return try await transfer.task.value
        } catch {
            // A failed import has rolled back: its place is free for the next.
            end(id)
            throw error
        }
    }

    // MARK: - Import, on the store thread

    /// How an import writes its tenant here.
    struct ImportTarget: Sendable {
        var backend: BackendID?
        var newID: Bool
        var masterKeys: MasterKeyring
        var sealedTables: [SealedTable]
    }

    private static func write(
        from handoff: ArchiveHandoff, opening: TenantArchive.Opening, as target: ImportTarget, into writer: TenantImportWriter
    ) throws -> ImportResult {
        let reader = TenantArchiveReader(opening: opening)
        var lines = TenantArchiveLines()
        var tenant: TenantID?
        var token: String?
        var resealer: TenantRowResealer?
        var tables: Set<String> = []
        var counts: [String: Int] = [:]
        var ended = false
        func record(_ line: [UInt8]) throws {
            guard !ended else { throw invalid("the archive has records after its end") }
            let value: JSONValue
            do {
                value = try JSONValue(parsing: line)
            } catch {
                throw invalid("a record of the archive is not JSON")
            }
            guard let current = tenant else {
                guard value["archive"]?.stringValue == TenantArchiveBody.kind,
                    value["formatVersion"] == .int(Int64(TenantArchive.formatVersion)),
                    let id = value["tenantId"]?.stringValue.flatMap(TenantID.init),
                    let keyText = value["dataKey"]?.stringValue, case .array(let names)? = value["tables"],
                    let row = value["tenant"], case .object = row
                else { throw invalid("the archive's manifest is missing or malformed") }
                var key = try AerieError.mappingCrypto { try Base64.decode(keyText) }
                defer { SecretBytes.wipe(&key) }
                let archivedKey = try AerieError.mappingCrypto { try DataKey.archived(key) }
                try writer.record(archiveID: reader.archiveID ?? [], backend: target.backend)
                // The tenant gets a data key of its own here: the archive's opens nothing stored.
                var here = id
                if target.newID, try writer.exists(id) {
                    here = TenantID.random()
                    token = TokenHasher.generate(prefix: AdminMethods.tenantTokenPrefix)
                }
                let dataKey = DataKey.generate()
                let rows = TenantRowResealer(tables: target.sealedTables, from: archivedKey, tenant: id, to: dataKey, tenant: here)
                guard case .object(let fields) = row else { throw invalid("the archive's tenant is not an object") }
                let master = target.masterKeys.current
                try writer.begin(
                    tenant: here, row: String(decoding: JSONValue.object(try rows.resealTenant(fields)).serialized(), as: UTF8.self),
                    wrappedDataKey: master.wrap(dataKey, tenantID: here.rawValue), masterKeyFingerprint: master.fingerprint,
                    backend: target.backend, tokenHash: token.map(TokenHasher.hash))
                resealer = rows
                let tablesHere = try writer.tables()
                tables = Set(names.compactMap(\.stringValue))
                guard tables.isSubset(of: tablesHere) else {
                    throw AerieError(
                        .unavailable, "the archive holds tables this server does not have (upgrade it first)",
                        details: "missing: \(tables.subtracting(tablesHere).sorted())")
                }
                tenant = id
                return
            }
            if let table = value["table"]?.stringValue, case .array(let rows)? = value["rows"], let resealer {
                guard tables.contains(table) else { throw invalid("the archive names a table its manifest does not") }
                let written = try rows.map { row -> String in
                    guard case .object(let fields) = row, row["tenant_id"]?.stringValue == current.rawValue else {
                        throw invalid("the archive holds a row of another tenant")
                    }
                    return String(decoding: JSONValue.object(try resealer.reseal(fields, table: table)).serialized(), as: UTF8.self)
                }
                if table == "tenant_keys" { try writer.refuseRoutedKeys(rows.compactMap { $0["verkey"]?.stringValue }) }
                try writer.insert(table: table, rows: written)
                counts[table, default: 0] += rows.count
            } else if case .object(let expected)? = value["end"]?["rows"] {
                let written = counts.filter { $0.value > 0 }
                let announced = expected.compactMapValues { value -> Int? in
                    if case .int(let n) = value, n > 0 { Int(n) } else { nil }
                }
                guard written == announced else { throw invalid("the archive's rows do not add up to its end record") }
                ended = true
            } else {
                throw invalid("the archive holds a record of an unknown kind")
            }
        }
        do {
            while let piece = try handoff.blockingTake() {
                for chunk in try reader.feed(piece) {
                    try lines.feed(chunk, line: record)
                }
            }
            try reader.finish()
        } catch let error as TenantArchiveError {
            throw AerieError(.invalidArchive, error.message, details: "archive refused: \(error.code)")
        }
        guard ended, lines.isEmpty, let resealer else { throw invalid("the archive ends before its end record") }
        try writer.countImportedMailbox()
        FaultPoint.reach("import.beforeCommit")
        return ImportResult(tenantId: resealer.newTenant, token: token, archiveId: Hex.encode(reader.archiveID ?? []), rows: counts)
    }

    private static func invalid(_ message: String) -> AerieError { AerieError(.invalidArchive, message) }

    /// An error as the session is answered: an `AerieError` as it is, anything else internal.
    private static func answer(_ error: any Error) -> AerieError {
        if let error = error as? AerieError { return error }
        if let error = error as? CryptoError { return AerieError(crypto: error) }
        return AerieError.internalError(details: String(reflecting: error))
    }

    // MARK: - Bookkeeping

    private func register(_ id: String, _ transfer: Transfer, session: any SessionHandle) throws {
        let admitted = transfers.withLock { transfers -> Bool in
            guard transfers.count < Self.maxTransfers else { return false }
            transfers[id] = transfer
            return true
        }
        guard admitted else {
            transfer.handoff.close(with: AerieError(.busy, "too many archive transfers at once"))
            transfer.task.cancel()
            throw AerieError(.busy, "this server runs \(Self.maxTransfers) archive transfers already; try again later")
        }
        session.onClose { [weak self] in self?.end(id, error: AerieError(.unavailable, "the session that ran the transfer closed")) }
    }

    private func owned(_ id: String, session: any SessionHandle) throws -> Transfer {
        guard let transfer = transfers.withLock({ $0[id] }), transfer.session == session.id else {
            throw AerieError.notFound("no archive transfer \(id) on this session")
        }
        return transfer
    }

    private func end(_ id: String, error: AerieError? = nil) {
        guard let transfer = transfers.withLock({ $0.removeValue(forKey: id) }) else { return }
        if let error { transfer.handoff.close(with: error) }
    }
}

/// An export's progress between the store's callbacks, which run one after another on one store
/// thread (`TenantArchiveStore.export`).
private final class ExportProgress: @unchecked Sendable {
    var chunker: TenantArchiveChunker?
    var counts: [String: Int] = [:]
}
