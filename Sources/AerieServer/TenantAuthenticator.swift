import AerieCore
import AerieCrypto
import AerieRPC
import AerieStore
import Logging

/// Checks tokens against the database. Tokens are only ever held as BLAKE2b hashes; the admin hash
/// is compared in constant time, tenant hashes are looked up by their (unique, indexed) hash.
struct TenantAuthenticator: SessionAuthenticator {
    let database: AerieDatabase
    let contexts: TenantContexts

    func authenticate(token: String) async throws -> SessionCredential {
        let hash = TokenHasher.hash(token)
        if let adminHash = try await database.tenants.adminTokenHash(), TokenHasher.equal(adminHash, hash) {
            return SessionCredential(kind: .admin, tokenHash: hash)
        }
        if let tenant = try await database.tenants.authenticate(tokenHash: hash) {
            return SessionCredential(kind: .tenant(tenant.id), tokenHash: hash)
        }
        throw AerieError(.unauthenticated, "invalid token")
    }

    func principal(for credential: SessionCredential, logger: Logger) async throws -> Principal {
        switch credential.kind {
        case .admin:
            guard let adminHash = try await database.tenants.adminTokenHash(),
                TokenHasher.equal(adminHash, credential.tokenHash)
            else { throw AerieError(.unauthenticated, "the admin token is no longer valid") }
            return .admin
        case .tenant(let id):
            guard let context = try await contexts.context(for: id, tokenHash: credential.tokenHash, logger: logger) else {
                throw AerieError(.unauthenticated, "the token is no longer valid (tenant suspended, deleted or token rotated)")
            }
            return .tenant(context)
        }
    }
}
