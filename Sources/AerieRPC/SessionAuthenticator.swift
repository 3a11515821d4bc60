import AerieCore
import Logging

/// What a successful `session.authenticate` leaves on the session. It holds the token's hash so
/// every later call can check the token is still the current one.
public struct SessionCredential: Sendable {
    public enum Kind: Sendable, Hashable {
        case tenant(TenantID)
        case admin
        /// A backend's service credential: acts for the tenants it owns, one named per call.
        case backend(BackendID)
    }

    public let kind: Kind
    public let tokenHash: [UInt8]

    public init(kind: Kind, tokenHash: [UInt8]) {
        self.kind = kind
        self.tokenHash = tokenHash
    }
}

/// Checks tokens for the RPC server; the server wiring backs it with the tenant directory.
public protocol SessionAuthenticator: Sendable {
    /// Throws `unauthenticated` for an unknown, suspended or deleted token.
    func authenticate(token: String) async throws -> SessionCredential
    /// Re-checks a credential on every call (a suspended tenant stops at once) and builds the
    /// principal the handler sees. Throws `unauthenticated` when the credential is no longer valid.
    /// `actingFor`: on a backend credential, the tenant the call names (`params._meta.tenantId`):
    /// the principal is that tenant's when the backend owns it and it is active, else `forbidden`
    /// (without saying whether the tenant exists); nil gives `.backend`.
    func principal(for credential: SessionCredential, actingFor tenant: TenantID?, logger: Logger) async throws -> Principal
}
