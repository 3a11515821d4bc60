import AerieStore
import AerieCore
import AerieCrypto
import Synchronization

/// Data keys for store tests: one per tenant id for the life of the test process, so a tenant's
/// database seals and opens its rows like a server's would (`sealing(with:)`).
enum TestKeys {
    private static let keys = Mutex<[TenantID: DataKey]>([:])

    static func keyring(_ id: TenantID) -> any TenantKeyring {
        FixedTenantKeyring(tenantID: id, dataKey: dataKey(id))
    }

    /// What opens the tenant's sealed values, as `TenantDirectory.inboundRecipient` asks for it.
    static func sealer(_ id: TenantID) -> any ValueSealer { dataKey(id).sealer(for: id) }

    private static func dataKey(_ id: TenantID) -> DataKey {
        keys.withLock { keys in
            if let key = keys[id] { return key }
            let key = DataKey.generate()
            keys[id] = key
            return key
        }
    }
}

extension AerieDatabase {
    /// The tenant's database, sealing with its test data key.
    func sealed(_ id: TenantID) -> any TenantDatabase { tenant(id).sealing(with: TestKeys.keyring(id)) }
}

extension TenantDirectory {
    /// The tenant holding `verkey`, as the inbound endpoint finds it.
    func owner(ofVerkey verkey: String) async throws -> TenantID? {
        try await inboundRecipient(verkeys: [verkey], recent: true, sealer: { id, _ in TestKeys.sealer(id) })?.tenant
    }
}
