import Logging

/// Everything a tenant-scoped handler may touch: the tenant's own data and nothing that reaches
/// another tenant.
public struct TenantContext: Sendable {
    public let tenantID: TenantID
    public let database: any TenantDatabase
    /// The tenant's data key, for the key wallet (`tenant.keys` in AerieCrypto).
    public let keyring: any TenantKeyring
    public var logger: Logger

    /// `database` tells the delivery service of the rows its transactions enqueue (the server's
    /// tenant databases are built with the `OutboxSignal`).
    public init(tenantID: TenantID, database: any TenantDatabase, keyring: any TenantKeyring, logger: Logger) {
        precondition(database.tenantID == tenantID, "a tenant context must wrap its own tenant's database")
        precondition(keyring.tenantID == tenantID, "a tenant context must hold its own tenant's keyring")
        self.tenantID = tenantID
        self.database = database.sealing(with: keyring)
        self.keyring = keyring
        self.logger = logger
    }

    /// A context without keys (its keyring throws): for code and tests that never use them.
    public init(tenantID: TenantID, database: any TenantDatabase, logger: Logger) {
        precondition(database.tenantID == tenantID, "a tenant context must wrap its own tenant's database")
        self.tenantID = tenantID
        self.database = database
        self.keyring = NoKeyring(tenantID: tenantID)
        self.logger = logger
    }
}

/// The keyring of a context built without one.
private struct NoKeyring: TenantKeyring {
    let tenantID: TenantID
    func dataKey() async throws -> any TenantDataKey {
        throw AerieError.internalError(details: "this tenant context was built without a keyring")
    }
}
