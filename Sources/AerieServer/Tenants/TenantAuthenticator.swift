import AerieCore
import AerieCrypto
import AerieRPC
import AerieStore
import Logging

/// Checks tokens against the database. Tokens are only ever held as BLAKE2b hashes; the admin hash
/// is compared in constant time, tenant hashes are looked up by their (unique, indexed) hash.
///
/// A tenant session's per-call check is answered from the `CredentialCache` when it can (no
/// database round trip); a miss reads `aerie.tenants` and fills the cache unless a credential
/// change (or a listener outage) happened while it read.
struct TenantAuthenticator: SessionAuthenticator {
    let database: AerieDatabase
    let contexts: TenantContexts
    var credentials = CredentialCache.off

    func authenticate(token: String) async throws -> SessionCredential {
        let hash = TokenHasher.hash(token)
        if let adminHash = try await database.tenants.adminTokenHash(), TokenHasher.equal(adminHash, hash) {
            return SessionCredential(kind: .admin, tokenHash: hash)
        }
        if token.hasPrefix(AdminMethods.backendTokenPrefix) {
            if let backend = try await database.backends.authenticate(tokenHash: hash) {
                return SessionCredential(kind: .backend(backend), tokenHash: hash)
            }
        } else if let tenant = try await database.tenants.authenticate(tokenHash: hash) {
            return SessionCredential(kind: .tenant(tenant.id), tokenHash: hash)
        }
        throw AerieError(.unauthenticated, "invalid token")
    }

    func principal(for credential: SessionCredential, actingFor: TenantID?, logger: Logger) async throws -> Principal {
        switch credential.kind {
        case .backend(let backend):
            // One round trip: the backend's token is current, and the tenant is its own and active.
            switch try await database.backends.check(backend, tokenHash: credential.tokenHash, actingFor: actingFor) {
            case .credentialInvalid:
                throw AerieError(.unauthenticated, "the backend token is no longer valid (backend suspended, deleted or token rotated)")
            case .notActingFor:
                guard let actingFor else { return .backend(backend) }
                throw AerieError(.forbidden, "tenant \(actingFor) is not an active tenant of this backend")
            case .allowed(let wrapped):
                guard let actingFor else { return .backend(backend) }
                var logger = logger
                logger[metadataKey: "backend"] = "\(backend)"
                return .tenant(contexts.context(for: actingFor, wrappedDataKey: wrapped, logger: logger))
            }
        case .admin:
            guard let adminHash = try await database.tenants.adminTokenHash(),
                TokenHasher.equal(adminHash, credential.tokenHash)
            else { throw AerieError(.unauthenticated, "the admin token is no longer valid") }
            return .admin
        case .tenant(let id):
            let generation: UInt64?
            switch credentials.lookup(tenant: id, key: credential.tokenHash) {
            case .hit(let wrapped):
                return .tenant(contexts.context(for: id, wrappedDataKey: wrapped, logger: logger))
            case .miss(let current):
                generation = current
            }
            guard let wrapped = try await database.tenants.activeWrappedDataKey(id, tokenHash: credential.tokenHash) else {
                throw AerieError(.unauthenticated, "the token is no longer valid (tenant suspended, deleted or token rotated)")
            }
            if let generation {
                credentials.store(tenant: id, key: credential.tokenHash, value: wrapped, generation: generation)
            }
            return .tenant(contexts.context(for: id, wrappedDataKey: wrapped, logger: logger))
        }
    }
}
