import AerieCore
import AerieCrypto

/// A tenant's keyring on the server: the wrapped data key read with the call's tenant check,
/// unwrapped on demand by the master keyring.
///
/// No cache of unwrapped data keys across calls: the wrapped key comes with the per-call tenant
/// check (no extra round trip), and unwrapping 32 bytes costs about a microsecond, less than
/// the database read every wallet operation makes anyway. So no unwrapped key outlives the call
/// that needed it, and rotation, suspension and deletion can never meet a stale key.
struct ServerTenantKeyring: TenantKeyring {
    let tenantID: TenantID
    let wrappedDataKey: [UInt8]
    let masterKeys: MasterKeyring

    func dataKey() async throws -> any TenantDataKey {
        try unwrapped()
    }

    /// The data key, unwrapped now (no suspension point: for code on a store thread).
    func unwrapped() throws -> DataKey {
        do {
            return try masterKeys.unwrap(wrappedDataKey, tenantID: tenantID)
        } catch let error as CryptoError {
            // The caller learns nothing about master keys; the log says what to do.
            throw AerieError.internalError(
                details: "cannot unwrap the data key of tenant \(tenantID): \(String(reflecting: error)). "
                    + "After `aerie-admin keys rotate-master` with AERIE_MASTER_KEY, set the new key and restart.")
        }
    }
}
