import AerieCore

/// A keyring holding one tenant's data key directly: for tools and tests that have the key in
/// hand. The server unwraps keys with its master key instead.
public struct FixedTenantKeyring: TenantKeyring {
    public let tenantID: TenantID
    private let key: DataKey

    public init(tenantID: TenantID, dataKey: DataKey) {
        self.tenantID = tenantID
        self.key = dataKey
    }

    public func dataKey() async throws -> any TenantDataKey { key }
}
