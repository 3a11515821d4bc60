import Logging

/// Everything a tenant-scoped handler may touch: the tenant's own data and nothing that reaches
/// another tenant.
public struct TenantContext: Sendable {
    public let tenantID: TenantID
    public let database: any TenantDatabase
    public var logger: Logger

    public init(tenantID: TenantID, database: any TenantDatabase, logger: Logger) {
        precondition(database.tenantID == tenantID, "a tenant context must wrap its own tenant's database")
        self.tenantID = tenantID
        self.database = database
        self.logger = logger
    }
}
