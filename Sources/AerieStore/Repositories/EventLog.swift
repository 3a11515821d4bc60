import AerieCore
import Foundation

/// One numbered event of the log (schema/0017): what the NOTIFY of the same change carries.
public struct LoggedEvent: Sendable, Equatable {
    public var tenant: TenantID
    public var position: Int64
    /// `message`, `connection` or `delivery`.
    public var kind: String
    /// The event's fields (ids, type, state), as the trigger wrote them.
    public var data: JSONValue
}

/// The durable event log (`aerie.events`): rows are written by the database triggers in the
/// transaction of the change they report; this type numbers them after commit, reads a backend's
/// stream, records its acknowledgement and prunes.
public struct EventLog: Sendable {
    let pool: ConnectionPool

    init(pool: ConnectionPool) { self.pool = pool }

    /// How many rows one sequencer run numbers at most.
    public static let sequenceBatch = 5000
    /// A page of a stream read at most.
    public static let maxPage = 1000

    /// Numbers committed events that have no position yet (at most `sequenceBatch`, in insert
    /// order). Returns nil when another caller (any process) holds the sequencer right now, else
    /// how many it numbered.
    public func sequence() async throws -> Int? {
        let numbered = try await pool.read { session in
            try session.query("SELECT aerie.sequence_events($1::int4)", [.int(Self.sequenceBatch)]).int(0, 0)
        }
        guard let numbered else { throw AerieError.internalError(details: "aerie.sequence_events returned nothing") }
        return numbered < 0 ? nil : numbered
    }

    /// The highest position assigned so far (0 before the first).
    public func head() async throws -> Int64 {
        try await pool.read { session in
            Int64(try session.query("SELECT aerie.event_head()").int(0, 0) ?? 0)
        }
    }

    /// What a backend's read found: its events after the position asked for, or that the
    /// backend's credential is no longer valid (suspended, deleted or token rotated).
    public enum BackendRead: Sendable, Equatable {
        case events([LoggedEvent])
        case credentialInvalid
    }

    /// The events of `backend`'s tenants with a position above `after`, in position order, at
    /// most `limit`, if the backend is still active with the token hashed `tokenHash`: one
    /// statement (`aerie.backend_events`, schema/0024), the check and the read together.
    public func read(backend: BackendID, tokenHash: [UInt8], after: Int64, limit: Int) async throws -> BackendRead {
        let limit = max(1, min(limit, Self.maxPage))
        return try await pool.read { session in
            let result = try session.query(
                "SELECT tenant_id::text, position, kind, data::text FROM aerie.backend_events($1::uuid, $2, $3::int8, $4::int4)",
                [.text(backend.rawValue), .bytes(tokenHash), .text(String(after)), .int(limit)])
            if result.rowCount == 1, result.int(0, 1) == -1 { return .credentialInvalid }
            return .events(try Self.events(in: result))
        }
    }

    static func events(in result: PostgresResult) throws -> [LoggedEvent] {
        try (0..<result.rowCount).map { row in
            guard let tenant = result.string(row, 0).flatMap(TenantID.init), let position = result.int(row, 1),
                let kind = result.string(row, 2), let text = result.string(row, 3),
                let data = try? JSONValue(parsing: Array(text.utf8))
            else { throw AerieError.internalError(details: "malformed row in aerie.events") }
            return LoggedEvent(tenant: tenant, position: Int64(position), kind: kind, data: data)
        }
    }

    /// Records that `backend` has processed its stream up to `position` (never moves back);
    /// returns the position now recorded.
    public func acknowledge(backend: BackendID, position: Int64) async throws -> Int64 {
        try await pool.transaction(tenant: nil) { session in
            let result = try session.query(
                """
                INSERT INTO aerie.backend_event_acks (backend_id, position) VALUES ($1::uuid, $2::int8)
                ON CONFLICT (backend_id) DO UPDATE
                SET position = greatest(aerie.backend_event_acks.position, EXCLUDED.position), updated_at = now()
                RETURNING position
                """, [.text(backend.rawValue), .text(String(position))])
            return Int64(result.int(0, 0) ?? 0)
        }
    }

    /// The position `backend` last acknowledged (0: none).
    public func acknowledged(backend: BackendID) async throws -> Int64 {
        try await pool.read { session in
            Int64(
                try session.query(
                    "SELECT position FROM aerie.backend_event_acks WHERE backend_id = $1::uuid", [.text(backend.rawValue)]
                ).int(0, 0) ?? 0)
        }
    }

    /// Deletes numbered events created before `cutoff`, and those at or below their backend's
    /// acknowledged position, in batches; returns how many went. Events without a backend
    /// follow the cutoff only; an unacknowledged event younger than the cutoff is never deleted.
    public func prune(createdBefore cutoff: Date, batch: Int = 5000) async throws -> Int {
        var total = 0
        while true {
            let removed = try await pool.read { session in
                try session.query(
                    "SELECT aerie.prune_events(to_timestamp($1::float8), $2::int4)",
                    [.text(String(cutoff.timeIntervalSince1970)), .int(batch)]
                ).int(0, 0) ?? 0
            }
            total += removed
            if removed < batch { return total }
        }
    }
}
