import AerieCore
import CLibPQ
import Foundation
import Metrics

/// One libpq connection. Every call blocks, so it is only ever used on a thread of the store's
/// `NIOThreadPool`, by one thread at a time; the pool's lock hands it from one user to the next
/// (hence `@unchecked Sendable`).
package final class PostgresConnection: @unchecked Sendable {
    private var handle: OpaquePointer?
    /// Set once the session is known to be gone; a broken connection is discarded, never reused.
    package private(set) var isBroken = false

    /// Connects, blocking. `conninfo` is a libpq connection string (`key=value ...` or a URI);
    /// `application_name` and `connect_timeout` get defaults that the string may override, and
    /// so do `defaults` (libpq keywords, e.g. `keepalives`). `settings` are set on the session
    /// once connected (`set_config(name, value, false)`), e.g. the quota limits schema/0020's
    /// triggers read.
    package init(
        conninfo: String, defaults: [(keyword: String, value: String)] = [], settings: [(name: String, value: String)] = [],
        answerTimeout: Duration = PostgresConnection.answerTimeout
    ) throws {
        self.answerTimeoutLimit = answerTimeout
        // Expanded last, so what the string names wins over the defaults before it.
        let keywords = ["application_name", "connect_timeout"] + defaults.map(\.keyword) + ["dbname"]
        let values = ["aerie", "10"] + defaults.map(\.value) + [conninfo]
        let connection = CStringArray.with(keywords) { keywordPointers in
            CStringArray.with(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let connection else {
            throw PostgresError(sqlState: nil, message: "out of memory", isConnectionFailure: true)
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection))
            PQfinish(connection)
            throw PostgresError(
                sqlState: nil, message: message.trimmingCharacters(in: .whitespacesAndNewlines),
                isConnectionFailure: true)
        }
        // Notices ("relation already exists, skipping") would otherwise go to stderr.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        self.handle = connection
        if !settings.isEmpty {
            let sql = "SELECT " + settings.indices.map { "set_config($\($0 * 2 + 1), $\($0 * 2 + 2), false)" }.joined(separator: ", ")
            do {
                _ = try query(sql, settings.flatMap { [SQLValue.text($0.name), .text($0.value)] })
            } catch {
                close()
                throw error
            }
        }
    }

    deinit { close() }

    /// The value libpq uses for connection option `keyword` (after defaults and the string).
    package func option(_ keyword: String) -> String? {
        guard let handle, let options = PQconninfo(handle) else { return nil }
        defer { PQconninfoFree(options) }
        var entry = options
        while let name = entry.pointee.keyword {
            if String(cString: name) == keyword { return entry.pointee.val.map { String(cString: $0) } }
            entry += 1
        }
        return nil
    }

    /// How long a statement (or a pipeline) may go without its answer before the connection is
    /// abandoned as broken: libpq would otherwise wait forever on a server that accepted the
    /// statement and never answers (a frozen server or network path), holding a store thread
    /// and a pool slot for good. Far above any statement Aerie runs outside migrations (those,
    /// `script`, are not bounded: DDL on a big table may legitimately run long).
    package static let answerTimeout: Duration = .seconds(300)
    private let answerTimeoutLimit: Duration

    /// Closes the session; safe to call twice.
    /// `aerie_db_round_trips_total`: statements or pipelines sent and waited for, by every
    /// connection of this process (the LISTEN connection's waits are not round trips). The
    /// figure issue 16 bounds per established connection; `aerie-bench connections` reads it.
    static let roundTrips = Counter(label: "aerie_db_round_trips_total")
    /// This connection's share of `roundTrips` (tests: how many a unit of work took).
    package private(set) var roundTripCount = 0

    private func countRoundTrip() {
        Self.roundTrips.increment()
        roundTripCount += 1
    }

    package func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        isBroken = true
    }

    /// Whether the connection can go back to the pool: alive and outside any transaction.
    var isReusable: Bool {
        guard let handle, !isBroken else { return false }
        return PQstatus(handle) == CONNECTION_OK && PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    /// Runs one parameterised statement (extended protocol, text results unless asked for binary). Statements are
    /// prepared on first use on this connection, in the same round trip as their first
    /// execution, and executed by name afterwards: the server skips parsing and planning.
    /// `binaryResults`: the rows come in binary format (`PostgresResult` reads either).
    @discardableResult
    package func query(_ sql: String, _ parameters: [SQLValue] = [], binaryResults: Bool = false) throws -> PostgresResult {
        let handle = try liveHandle()
        let key = PreparedKey(sql: sql, parameters: parameters)
        guard let name = prepared[key] else { return try pipeline([(sql, parameters)], binaryResult: binaryResults) }
        countRoundTrip()
        let sent = Parameters.with(parameters) { count, _, values, lengths, formats in
            PQsendQueryPrepared(handle, name, count, values, lengths, formats, binaryResults ? 1 : 0)
        }
        guard sent == 1 else { throw failure(nil, sql, forceBroken: true) }
        do {
            let raw = try nextResult(handle, sql)
            // The statement's results end with a NULL (one result: a single statement).
            while let extra = try nextResult(handle, sql) { PQclear(extra) }
            return try check(raw, sql)
        } catch let error as PostgresError {
            forgetIfStale(key, error)
            throw error
        }
    }

    /// Runs a script of several statements without parameters (simple protocol): migrations and
    /// fixed DDL only, never text that came from a caller.
    package func script(_ sql: String) throws {
        let handle = try liveHandle()
        countRoundTrip()
        _ = try check(PQexec(handle, sql), sql)
    }

    /// Sends several statements in one round trip (libpq pipeline mode), preparing those not yet
    /// prepared on the way, and returns the result of statement `resultIndex` (default: the
    /// last). Used to fold `BEGIN` and the tenant setting into a transaction's first statement.
    /// If a statement fails, the first failure is thrown; the server skipped the rest.
    /// `binaryResult`: the returned statement's columns come in binary format (`PostgresResult`).
    ///
    /// `afterSync`: statements sent in the same round trip after the pipeline's Sync, so they run
    /// once `statements` ended (an implicit transaction among them committed, or failed), as an
    /// implicit transaction of their own. Their outcome is not the caller's: a failure among them
    /// is dropped (a lost connection then shows in `isBroken`), and the answer stays that of
    /// `statements`. For what follows a commit without belonging to it (`DatabaseSession`'s
    /// events announced after the commit).
    func pipeline(
        _ statements: [(sql: String, parameters: [SQLValue])], resultIndex: Int? = nil, binaryResult: Bool = false,
        afterSync: [(sql: String, parameters: [SQLValue])] = []
    ) throws -> PostgresResult {
        let handle = try liveHandle()
        let wanted = resultIndex ?? statements.count - 1
        let wantedFormat: Int32 = binaryResult ? 1 : 0
        let steps = self.steps(statements)
        let stepsAfter = self.steps(afterSync)

        guard PQenterPipelineMode(handle) == 1 else { throw failure(nil, statements.first?.sql) }
        for step in steps {
            guard send(step, handle, format: step.index == wanted ? wantedFormat : 0) else {
                throw failure(nil, step.key.sql, forceBroken: true)
            }
        }
        countRoundTrip()
        guard PQpipelineSync(handle) == 1 else { throw failure(nil, statements.first?.sql, forceBroken: true) }
        for step in stepsAfter {
            guard send(step, handle, format: 0) else { throw failure(nil, step.key.sql, forceBroken: true) }
        }
        guard stepsAfter.isEmpty || PQpipelineSync(handle) == 1, PQflush(handle) == 0 else {
            throw failure(nil, statements.first?.sql, forceBroken: true)
        }

        var firstError: PostgresError?
        var last: PostgresResult?
        for step in steps {
            guard let raw = try nextResult(handle, step.key.sql) else { throw failure(nil, step.key.sql, forceBroken: true) }
            let status = PQresultStatus(raw)
            if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK {
                if case .prepare(let name) = step.kind {
                    prepared[step.key] = name
                    PQclear(raw)
                } else if step.index == wanted {
                    last = PostgresResult(raw)
                } else {
                    PQclear(raw)
                }
            } else {
                if status != PGRES_PIPELINE_ABORTED, firstError == nil {
                    var error = failure(raw, step.key.sql)
                    error.statementIndex = step.index
                    if case .execute = step.kind { forgetIfStale(step.key, error) }
                    firstError = error
                }
                PQclear(raw)
            }
            if isBroken { throw firstError ?? failure(nil, step.key.sql, forceBroken: true) }
            // Each step's results end with a NULL.
            while let extra = try nextResult(handle, step.key.sql) { PQclear(extra) }
        }
        guard try readSync(handle) else { throw failure(nil, nil, forceBroken: true) }
        if !stepsAfter.isEmpty { readAfterSync(stepsAfter, handle) }
        guard isBroken || PQexitPipelineMode(handle) == 1 else { throw failure(nil, nil, forceBroken: true) }
        if let firstError { throw firstError }
        guard let last else { throw failure(nil, nil, forceBroken: true) }
        return last
    }

    /// The steps that send `statements`: prepare (first use on this connection) and execute.
    private func steps(_ statements: [(sql: String, parameters: [SQLValue])]) -> [Step] {
        var steps: [Step] = []
        for (index, (sql, parameters)) in statements.enumerated() {
            let key = PreparedKey(sql: sql, parameters: parameters)
            if let name = prepared[key] {
                steps.append(Step(kind: .execute(name), key: key, parameters: parameters, index: index))
            } else if prepared.count < Self.maxPreparedStatements {
                statementCounter += 1
                let name = "aerie_\(statementCounter)"
                steps.append(Step(kind: .prepare(name), key: key, parameters: parameters, index: index))
                steps.append(Step(kind: .execute(name), key: key, parameters: parameters, index: index))
            } else {
                steps.append(Step(kind: .unnamed, key: key, parameters: parameters, index: index))
            }
        }
        return steps
    }

    private func send(_ step: Step, _ handle: OpaquePointer, format: Int32) -> Bool {
        let sent = Parameters.with(step.parameters) { count, types, values, lengths, formats in
            switch step.kind {
            case .prepare(let name):
                PQsendPrepare(handle, name, step.key.sql, count, types)
            case .execute(let name):
                PQsendQueryPrepared(handle, name, count, values, lengths, formats, format)
            case .unnamed:
                PQsendQueryParams(handle, step.key.sql, count, types, values, lengths, formats, format)
            }
        }
        return sent == 1
    }

    /// Reads a pipeline's Sync: false when something else came.
    private func readSync(_ handle: OpaquePointer) throws -> Bool {
        guard let sync = try nextResult(handle, nil) else { return false }
        let status = PQresultStatus(sync)
        PQclear(sync)
        return status == PGRES_PIPELINE_SYNC
    }

    /// Reads the results of `afterSync`'s steps and their Sync, keeping only what they
    /// prepared; a failure is dropped (`pipeline`), a lost connection ends the reading.
    private func readAfterSync(_ steps: [Step], _ handle: OpaquePointer) {
        do {
            for step in steps {
                guard let raw = try nextResult(handle, step.key.sql) else {
                    _ = failure(nil, step.key.sql, forceBroken: true)
                    return
                }
                let status = PQresultStatus(raw)
                if status == PGRES_COMMAND_OK, case .prepare(let name) = step.kind { prepared[step.key] = name }
                if status != PGRES_TUPLES_OK, status != PGRES_COMMAND_OK, status != PGRES_PIPELINE_ABORTED {
                    let error = failure(raw, step.key.sql)
                    if case .execute = step.kind { forgetIfStale(step.key, error) }
                }
                PQclear(raw)
                if isBroken { return }
                while let extra = try nextResult(handle, step.key.sql) { PQclear(extra) }
            }
            if try !readSync(handle) { _ = failure(nil, nil, forceBroken: true) }
        } catch {
            // `nextResult` marked the connection broken.
        }
    }

    /// `PQgetResult`, after waiting at most `answerTimeout` for the input it needs (libpq's own
    /// wait has no bound). On timeout the connection is closed and the error is a connection
    /// failure: as for a connection lost mid-statement, a transaction left open cannot commit,
    /// and a commit in flight has an unknown outcome (`DatabaseSession`).
    private func nextResult(_ handle: OpaquePointer, _ sql: String?) throws -> OpaquePointer? {
        // Input already there (the usual case for every result after a statement's first): no
        // clock, no poll.
        guard PQisBusy(handle) == 1 else { return PQgetResult(handle) }
        let deadline = ContinuousClock.now + answerTimeoutLimit
        repeat {
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                close()
                throw PostgresError(
                    sqlState: nil,
                    message: "no answer from the database within \(answerTimeoutLimit); connection abandoned",
                    statement: sql, isConnectionFailure: true)
            }
            let socket = PQsocket(handle)
            guard socket >= 0 else { break }  // no socket left: PQgetResult reports the failure
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(clamping: left.nanoseconds / 1_000_000 + 1))
            if ready < 0 && errno != EINTR { break }  // PQgetResult reports the failure
            // A consumed error (connection lost) leaves PQisBusy false: PQgetResult reports it.
            if ready > 0, PQconsumeInput(handle) == 0 { break }
        } while PQisBusy(handle) == 1
        return PQgetResult(handle)
    }

    // MARK: - Prepared statements

    /// Statements are few and fixed in practice; the bound only guards against a caller that
    /// builds SQL text dynamically.
    static let maxPreparedStatements = 256
    private var prepared: [PreparedKey: String] = [:]
    private var statementCounter = 0

    /// Parameter kinds are part of the key: a statement is prepared with `bytea` for byte
    /// parameters and server-inferred types for the rest.
    private struct PreparedKey: Hashable {
        var sql: String
        var byteaMask: UInt64

        init(sql: String, parameters: [SQLValue]) {
            self.sql = sql
            var mask: UInt64 = 0
            for (index, parameter) in parameters.enumerated() where index < 64 {
                if case .bytes = parameter { mask |= 1 << UInt64(index) }
            }
            self.byteaMask = mask
        }
    }

    private struct Step {
        enum Kind {
            case prepare(String)
            case execute(String)
            case unnamed
        }
        var kind: Kind
        var key: PreparedKey
        var parameters: [SQLValue]
        /// The statement this step belongs to.
        var index: Int
    }

    /// A prepared statement whose plan went stale (a migration changed a table's columns) or
    /// that vanished is prepared afresh next time.
    private func forgetIfStale(_ key: PreparedKey, _ error: PostgresError) {
        if error.sqlState == "0A000" || error.sqlState == "26000" { prepared[key] = nil }
    }

    // MARK: - Errors

    func liveHandle() throws -> OpaquePointer {
        guard let handle, !isBroken else {
            throw PostgresError(sqlState: nil, message: "connection is closed", isConnectionFailure: true)
        }
        return handle
    }

    private func check(_ raw: OpaquePointer?, _ sql: String) throws -> PostgresResult {
        guard let raw else { throw failure(nil, sql, forceBroken: PQstatus(handle) == CONNECTION_BAD) }
        let status = PQresultStatus(raw)
        guard status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK || status == PGRES_EMPTY_QUERY else {
            let error = failure(raw, sql)
            PQclear(raw)
            throw error
        }
        return PostgresResult(raw)
    }

    /// Builds the error for a failed result (or a failed call when `raw` is nil) and marks the
    /// connection broken when the session is gone.
    private func failure(_ raw: OpaquePointer?, _ sql: String?, forceBroken: Bool = false) -> PostgresError {
        var sqlState: String?
        var primary: String?
        var message: String
        if let raw {
            sqlState = PQresultErrorField(raw, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            primary = PQresultErrorField(raw, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
            message = String(cString: PQresultErrorMessage(raw))
        } else if let handle {
            message = String(cString: PQerrorMessage(handle))
        } else {
            message = "connection is closed"
        }
        if message.isEmpty { message = "unknown libpq failure" }
        let gone = forceBroken || handle.map { PQstatus($0) == CONNECTION_BAD } ?? true
            || PostgresError.isConnectionState(sqlState)
        if gone { isBroken = true }
        return PostgresError(
            sqlState: sqlState, message: message.trimmingCharacters(in: .whitespacesAndNewlines), primaryMessage: primary,
            statement: sql, isConnectionFailure: gone)
    }
}

/// Marshals `SQLValue`s into the parallel arrays `PQexecParams` expects, all of them and every
/// value's bytes in one allocation: a statement used to cost four arrays and a buffer or two per
/// value (`utf8CString`, then a copy), about 2 % of the server's CPU per connection (issue 16).
private enum Parameters {
    static let byteaOID: Oid = 17

    static func with<R>(
        _ parameters: [SQLValue],
        _ body: (
            Int32, UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?,
            UnsafePointer<Int32>?
        ) -> R
    ) -> R {
        if parameters.isEmpty { return body(0, nil, nil, nil, nil) }
        let count = parameters.count
        // Layout: the value pointers, then the lengths, formats and types (4 bytes each), then
        // the values' bytes (text NUL-terminated).
        var valueBytes = 0
        for parameter in parameters {
            switch parameter {
            case .null: break
            case .text(let string): valueBytes += string.utf8.count + 1
            case .bytes(let bytes): valueBytes += bytes.count
            }
        }
        let pointersSize = count * MemoryLayout<UnsafePointer<CChar>?>.stride
        let intsSize = count * 4
        let buffer = UnsafeMutableRawPointer.allocate(
            byteCount: pointersSize + 3 * intsSize + max(valueBytes, 1), alignment: MemoryLayout<UnsafeRawPointer>.alignment)
        defer { buffer.deallocate() }
        let values = buffer.bindMemory(to: UnsafePointer<CChar>?.self, capacity: count)
        let lengths = (buffer + pointersSize).bindMemory(to: Int32.self, capacity: count)
        let formats = (buffer + pointersSize + intsSize).bindMemory(to: Int32.self, capacity: count)
        let types = (buffer + pointersSize + 2 * intsSize).bindMemory(to: Oid.self, capacity: count)
        // Text and NULL are format 0, type 0 (inferred) and length 0 (ignored); bytes override.
        values.initialize(repeating: nil, count: count)
        lengths.initialize(repeating: 0, count: count)
        formats.initialize(repeating: 0, count: count)
        types.initialize(repeating: 0, count: count)
        var next = buffer + pointersSize + 3 * intsSize
        for (index, parameter) in parameters.enumerated() {
            switch parameter {
            case .null:
                continue
            case .text(let string):
                var text = string
                let size = text.withUTF8 { utf8 -> Int in
                    if let base = utf8.baseAddress { next.copyMemory(from: base, byteCount: utf8.count) }
                    return utf8.count
                }
                next.storeBytes(of: 0, toByteOffset: size, as: UInt8.self)
                values[index] = UnsafePointer(next.assumingMemoryBound(to: CChar.self))
                next += size + 1
            case .bytes(let bytes):
                bytes.withUnsafeBytes { raw in
                    if let base = raw.baseAddress { next.copyMemory(from: base, byteCount: raw.count) }
                }
                values[index] = UnsafePointer(next.assumingMemoryBound(to: CChar.self))
                lengths[index] = Int32(bytes.count)
                formats[index] = 1
                types[index] = byteaOID
                next += bytes.count
            }
        }
        return body(Int32(count), types, values, lengths, formats)
    }
}

/// A NULL-terminated array of C strings that lives for the duration of a call.
enum CStringArray {
    static func with<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
