import AerieCore
import AerieStore
import Logging

/// Builds the `TenantContext` a handler gets: the tenant's database and keyring, after checking
/// in one primary-key lookup that the tenant exists, is active and (for a session) still has
/// the session's token. Sessions use it per call; the inbound DIDComm endpoint builds its context
/// from `TenantDirectory.inboundRecipient`, which finds the tenant and its key (and the
/// recipient's key and connection, opened with `sealer`) in one round trip.
struct TenantContexts: Sendable {
    let database: AerieDatabase
    let masterKeys: MasterKeyring
    /// Hears of the outbox rows the tenants' transactions enqueue (the delivery service's wake-up).
    var outboxSignal: (any OutboxSignal)? = nil

    /// Nil when the tenant is missing or suspended, or its token is no longer `tokenHash`.
    func context(for id: TenantID, tokenHash: [UInt8]?, logger: Logger) async throws -> TenantContext? {
        guard let wrapped = try await database.tenants.activeWrappedDataKey(id, tokenHash: tokenHash) else {
            return nil
        }
        return context(for: id, wrappedDataKey: wrapped, logger: logger)
    }

    /// What opens the sealed values of an active tenant whose wrapped data key the caller has
    /// just read.
    func sealer(for id: TenantID, wrappedDataKey wrapped: [UInt8]) throws -> any ValueSealer {
        try ServerTenantKeyring(tenantID: id, wrappedDataKey: wrapped, masterKeys: masterKeys).unwrapped().sealer(for: id)
    }

    /// The context of an active tenant whose wrapped data key the caller has just read. Its
    /// logger names the tenant (a logger that does already is kept as it is: a change of
    /// metadata costs the stream handler a new rendering of all of it, on every call).
    func context(for id: TenantID, wrappedDataKey wrapped: [UInt8], logger: Logger) -> TenantContext {
        var tenantLogger = logger
        let tenant = Logger.MetadataValue.string(id.rawValue)
        if logger[metadataKey: "tenant"] != tenant { tenantLogger[metadataKey: "tenant"] = tenant }
        return TenantContext(
            tenantID: id, database: database.tenant(id, outbox: outboxSignal, wrappedDataKey: wrapped),
            keyring: ServerTenantKeyring(tenantID: id, wrappedDataKey: wrapped, masterKeys: masterKeys),
            logger: tenantLogger)
    }
}
