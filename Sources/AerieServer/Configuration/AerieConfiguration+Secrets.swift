extension AerieConfiguration {
    /// The master key and the sealing of rows older releases left in clear.
    public struct Secrets: Sendable {
        /// `AERIE_MASTER_KEY`: base64 of 32 bytes; nil means `<home>/master-key` (created 0600).
        public var masterKeyBase64: String?
        /// `AERIE_SEALING_SWEEP_SECONDS`: how often rows still in the previous release's clear form
        /// are looked for and sealed (`SealingMigrationService`, also once at start); nil (0) = off.
        public var sealingSweepInterval: Duration? = .seconds(60)

        public init() {}
    }
}
