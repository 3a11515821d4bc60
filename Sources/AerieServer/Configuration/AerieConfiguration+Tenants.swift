extension AerieConfiguration {
    /// How long tenants' data is kept, and what moving a tenant allows.
    public struct Tenants: Sendable {
        /// `AERIE_MESSAGE_RETENTION_DAYS`: reviewed (`MS-106`) mailbox messages older than this many
        /// days are purged; nil keeps them forever.
        public var messageRetentionDays: Int?
        /// How often the retention sweep runs (hourly).
        public var retentionSweepInterval: Duration = .seconds(3600)
        /// `AERIE_MOVED_TENANT_GRACE_SECONDS`: how long after a move the old server answers the
        /// moved tenant's keys 503 (retry later) instead of 400 (unknown): a week.
        public var movedGraceSeconds = 7 * 24 * 3600
        /// `AERIE_TENANT_SELF_EXPORT`: a tenant's own session may export a sealed archive of itself
        /// (`tenant.export`). Off: only the operator and the tenant's backend export.
        public var selfExport = false

        public init() {}
    }

    /// The durable event log.
    public struct Events: Sendable {
        /// `AERIE_EVENT_RETENTION_SECONDS`: events older than this are pruned, acknowledged or
        /// not; a backend's acknowledged events go at the next sweep.
        public var retention: Duration = .seconds(7 * 86_400)
        /// How often the log is pruned (every minute).
        public var pruneInterval: Duration = .seconds(60)

        public init() {}
    }
}
