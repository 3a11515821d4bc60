import AerieStore
import AerieCore
import AerieCrypto
import Synchronization

/// Data keys for store tests: one per tenant id for the life of the test process, so a tenant's
/// database seals and opens its rows like a server's would (`sealing(with:)`).
enum TestKeys {
    private static let keys = Mutex<[TenantID: DataKey]>([:])

    static func keyring(_ id: TenantID) -> any TenantKeyring {
        let key = keys.withLock { keys in
            if let key = keys[id] { return key }
            let key = DataKey.generate()
            keys[id] = key
            return key
        }
        return FixedTenantKeyring(tenantID: id, dataKey: key)
    }
}

extension AerieDatabase {
    /// The tenant's database, sealing with its test data key.
    func sealed(_ id: TenantID) -> any TenantDatabase { tenant(id).sealing(with: TestKeys.keyring(id)) }
}
