import AerieCore
import Foundation

/// A backend's webhook as the admin API shows it (never its secret).
public struct WebhookRecord: Sendable, Hashable {
    public var backend: BackendID
    public var url: String
    /// The position up to which the receiver has taken the events (answered 2xx).
    public var position: Int64
    /// Failed attempts since the last delivered batch.
    public var attempts: Int
    public var nextAttemptAt: Date
    public var lastError: String?
    public var deliveredAt: Date?
}

/// A webhook leased for one delivery round (`BackendWebhooks.claim`).
public struct ClaimedWebhook: Sendable, Hashable {
    public var backend: BackendID
    public var url: String
    public var secretWrapped: [UInt8]
    /// Changes when the webhook is set again; outcomes are recorded only for the same one.
    public var generation: String
    public var position: Int64
    public var attempts: Int
}

/// Backends' webhooks (`aerie.backend_webhooks`, schema/0025): their settings, their cursor in
/// the event log, and the leases that keep one server at a time delivering for a backend.
public struct BackendWebhooks: Sendable {
    let pool: ConnectionPool

    init(pool: ConnectionPool) { self.pool = pool }

    static let columns = """
        backend_id::text, url, position, attempts, (extract(epoch FROM next_attempt_at) * 1000000)::int8, last_error,
        (extract(epoch FROM delivered_at) * 1000000)::int8
        """

    static func records(in result: PostgresResult) throws -> [WebhookRecord] {
        try (0..<result.rowCount).map { row in
            guard let backend = result.string(row, 0).flatMap(BackendID.init), let url = result.string(row, 1),
                let position = result.int(row, 2), let attempts = result.int(row, 3), let next = result.date(microseconds: row, 4)
            else { throw AerieError.internalError(details: "malformed row in aerie.backend_webhooks") }
            return WebhookRecord(
                backend: backend, url: url, position: Int64(position), attempts: attempts, nextAttemptAt: next,
                lastError: result.string(row, 5), deliveredAt: result.date(microseconds: row, 6))
        }
    }

    /// Sets (or replaces) `backend`'s webhook: a new URL, secret and generation, its cursor at
    /// `position`, due at once. Nil when there is no such backend.
    public func set(
        backend: BackendID, url: String, secretWrapped: [UInt8], generation: String, position: Int64
    ) async throws -> WebhookRecord? {
        try await pool.transaction(tenant: nil) { session in
            let result = try session.query(
                """
                INSERT INTO aerie.backend_webhooks (backend_id, url, secret_wrapped, generation, position)
                SELECT b.id, $2, $3, $4::uuid, $5::int8 FROM aerie.backends b WHERE b.id = $1::uuid
                ON CONFLICT (backend_id) DO UPDATE SET url = EXCLUDED.url, secret_wrapped = EXCLUDED.secret_wrapped,
                    generation = EXCLUDED.generation, position = EXCLUDED.position, attempts = 0, next_attempt_at = now(),
                    leased_by = NULL, leased_until = NULL, last_error = NULL, delivered_at = NULL, updated_at = now()
                RETURNING \(Self.columns)
                """,
                [.text(backend.rawValue), .text(url), .bytes(secretWrapped), .text(generation), .text(String(position))])
            return try Self.records(in: result).first
        }
    }

    /// Removes `backend`'s webhook; whether it had one.
    public func clear(backend: BackendID) async throws -> Bool {
        try await pool.read { session in
            try session.execute("DELETE FROM aerie.backend_webhooks WHERE backend_id = $1::uuid", [.text(backend.rawValue)]) == 1
        }
    }

    public func get(backend: BackendID) async throws -> WebhookRecord? {
        try await pool.read { session in
            try Self.records(
                in: session.query("SELECT \(Self.columns) FROM aerie.backend_webhooks WHERE backend_id = $1::uuid", [.text(backend.rawValue)])
            ).first
        }
    }

    /// Whether any backend has a webhook.
    public func anyExist() async throws -> Bool {
        try await pool.read { session in
            try session.query("SELECT EXISTS (SELECT 1 FROM aerie.backend_webhooks)").bool(0, 0) ?? false
        }
    }

    /// Leases up to `limit` webhooks that are due and have events past their cursor, for
    /// `leaseSeconds`, in the name of `instance` (which may take back its own leases at once,
    /// except those of the backends in `running`: its deliveries still under way).
    public func claim(instance: String, leaseSeconds: Int, limit: Int, running: Set<BackendID> = []) async throws -> [ClaimedWebhook] {
        let runningArray = "{" + running.map(\.rawValue).sorted().joined(separator: ",") + "}"
        return try await pool.read { session in
            let result = try session.query(
                """
                SELECT backend_id::text, url, secret_wrapped, generation::text, position, attempts
                FROM aerie.claim_webhooks($1, $2::int4, $3::int4, $4::uuid[])
                """, [.text(instance), .int(leaseSeconds), .int(limit), .text(runningArray)])
            return try (0..<result.rowCount).map { row in
                guard let backend = result.string(row, 0).flatMap(BackendID.init), let url = result.string(row, 1),
                    let secret = result.bytes(row, 2), let generation = result.string(row, 3), let position = result.int(row, 4),
                    let attempts = result.int(row, 5)
                else { throw AerieError.internalError(details: "malformed row from aerie.claim_webhooks") }
                return ClaimedWebhook(
                    backend: backend, url: url, secretWrapped: secret, generation: generation, position: Int64(position),
                    attempts: attempts)
            }
        }
    }

    /// The events of `webhook`'s backend after its cursor, in position order, at most `limit`;
    /// nothing when the backend is no longer active or the webhook was set again or cleared.
    public func events(for webhook: ClaimedWebhook, limit: Int) async throws -> [LoggedEvent] {
        try await pool.transaction(tenant: nil) { session in
            let allowed = try session.query(
                """
                SELECT set_config('aerie.backend_id', b.id::text, true) FROM aerie.backends b
                JOIN aerie.backend_webhooks w ON w.backend_id = b.id AND w.generation = $2::uuid
                WHERE b.id = $1::uuid AND b.status = 'active'
                """, [.text(webhook.backend.rawValue), .text(webhook.generation)])
            guard allowed.rowCount == 1 else { return [] }
            let result = try session.query(
                """
                SELECT tenant_id::text, position, kind, data::text FROM aerie.events
                WHERE backend_id = $1::uuid AND position > $2::int8 ORDER BY position LIMIT $3
                """, [.text(webhook.backend.rawValue), .text(String(webhook.position)), .int(max(1, min(limit, EventLog.maxPage)))])
            return try EventLog.events(in: result)
        }
    }

    /// The receiver took the events up to `position`: the cursor moves there (never back), the
    /// failures are forgotten and the lease is released. False when the webhook was set again
    /// or cleared meanwhile (nothing changes).
    @discardableResult
    public func delivered(_ webhook: ClaimedWebhook, upTo position: Int64, instance: String) async throws -> Bool {
        try await pool.read { session in
            try session.execute(
                """
                UPDATE aerie.backend_webhooks SET position = greatest(position, $3::int8), attempts = 0, next_attempt_at = now(),
                    last_error = NULL, delivered_at = now(), leased_by = NULL, leased_until = NULL, updated_at = now()
                WHERE backend_id = $1::uuid AND generation = $2::uuid AND leased_by = $4
                """,
                [.text(webhook.backend.rawValue), .text(webhook.generation), .text(String(position)), .text(instance)]) == 1
        }
    }

    /// A delivery failed: the next attempt waits `retryAfterSeconds`; the lease is released.
    public func failed(_ webhook: ClaimedWebhook, error: String, retryAfterSeconds: Double, instance: String) async throws {
        _ = try await pool.read { session in
            try session.execute(
                """
                UPDATE aerie.backend_webhooks SET attempts = attempts + 1,
                    next_attempt_at = now() + make_interval(secs => $3::float8), last_error = left($4, 500),
                    leased_by = NULL, leased_until = NULL, updated_at = now()
                WHERE backend_id = $1::uuid AND generation = $2::uuid AND leased_by = $5
                """,
                [.text(webhook.backend.rawValue), .text(webhook.generation), .text(String(retryAfterSeconds)), .text(error),
                 .text(instance)])
        }
    }

    /// Master-key rotation: every webhook secret `rewrap` returns new bytes for (given backend,
    /// generation and the wrapped secret; nil leaves it) is replaced, in one transaction.
    /// Returns how many.
    public func rewrapSecrets(_ rewrap: @escaping @Sendable (BackendID, String, [UInt8]) throws -> [UInt8]?) async throws -> Int {
        try await pool.transaction(tenant: nil) { session in
            let rows = try session.query(
                "SELECT backend_id::text, generation::text, secret_wrapped FROM aerie.backend_webhooks ORDER BY backend_id FOR UPDATE")
            var count = 0
            for row in 0..<rows.rowCount {
                guard let backend = rows.string(row, 0).flatMap(BackendID.init), let generation = rows.string(row, 1),
                    let wrapped = rows.bytes(row, 2)
                else { throw AerieError.internalError(details: "malformed row in aerie.backend_webhooks") }
                guard let rewrapped = try rewrap(backend, generation, wrapped) else { continue }
                count += try session.execute(
                    "UPDATE aerie.backend_webhooks SET secret_wrapped = $3, updated_at = now() WHERE backend_id = $1::uuid AND generation = $2::uuid",
                    [.text(backend.rawValue), .text(generation), .bytes(rewrapped)])
            }
            return count
        }
    }

    /// Gives a lease back without an outcome (nothing to send, or shutting down).
    public func release(_ webhook: ClaimedWebhook, instance: String) async throws {
        _ = try await pool.read { session in
            try session.execute(
                "UPDATE aerie.backend_webhooks SET leased_by = NULL, leased_until = NULL WHERE backend_id = $1::uuid AND leased_by = $2",
                [.text(webhook.backend.rawValue), .text(instance)])
        }
    }
}
