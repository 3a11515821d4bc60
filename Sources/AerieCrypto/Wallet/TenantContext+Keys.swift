import AerieCore

extension TenantContext {
    /// The tenant's key wallet: create, list, sign, pack and unpack with keys stored sealed.
    public var keys: KeyWallet { KeyWallet(tenant: self) }
}

/// AerieCore passes data keys around opaquely; the wallet casts them back.
extension DataKey: TenantDataKey {
    public func sealer(for tenantID: TenantID) -> any ValueSealer { DataSealer(dataKey: self, tenantID: tenantID) }
}
