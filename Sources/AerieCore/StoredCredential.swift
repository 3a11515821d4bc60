import Foundation

/// A W3C Verifiable Credential a tenant holds (JSON-LD, RFC 0593's `aries/ld-proof-vc@v1.0`),
/// stored after its proof verified and its content matched what was offered. The issue-credential
/// plugin writes them; the present-proof plugin reads them. Sealed at rest like all tenant data:
/// only the id, the connection and the times stay clear.
public struct StoredCredential: Sendable, Hashable {
    public var id: UUID
    /// The credential as issued, proof included.
    public var credential: JSONValue
    /// The issuer's DID (`issuer` or `issuer.id`).
    public var issuer: String
    /// The credential's `type` list (e.g. `["VerifiableCredential", "UniversityDegreeCredential"]`).
    public var types: [String]
    /// `credentialSubject.id`: the tenant's holder did:key the credential is bound to.
    public var subjectId: String?
    public var issuanceDate: Date?
    public var expirationDate: Date?
    /// The connection it was issued over (nil: connectionless, or the connection is deleted).
    public var connectionId: UUID?
    /// The issue-credential exchange that brought it.
    public var exchangeId: UUID?
    public var createdAt: Date

    public init(
        id: UUID = UUID.random(), credential: JSONValue, issuer: String, types: [String], subjectId: String?,
        issuanceDate: Date?, expirationDate: Date?, connectionId: UUID?, exchangeId: UUID?, createdAt: Date = Date()
    ) {
        self.id = id
        self.credential = credential
        self.issuer = issuer
        self.types = types
        self.subjectId = subjectId
        self.issuanceDate = issuanceDate
        self.expirationDate = expirationDate
        self.connectionId = connectionId
        self.exchangeId = exchangeId
        self.createdAt = createdAt
    }
}

/// Which stored credentials a listing answers: every condition given must hold.
public struct CredentialFilter: Sendable, Hashable {
    /// Credentials whose `type` contains every one of these.
    public var types: [String]
    /// Credentials of this issuer DID.
    public var issuer: String?

    public init(types: [String] = [], issuer: String? = nil) {
        self.types = types
        self.issuer = issuer
    }

    public static let all = CredentialFilter()
}

/// The tenant's stored credentials inside one tenant transaction:
/// `tx.credentials` (`tx.repository(CredentialRepository.self)`), provided by the issue-credential
/// plugin's storage (`unavailable` while that plugin is off).
public protocol CredentialRepository {
    /// Stores the credential; throws `conflict` when the tenant already holds one with its id.
    func insert(_ credential: StoredCredential) throws
    func get(_ id: UUID) throws -> StoredCredential?
    /// Credentials matching `filter`, oldest first, after the credential `after` (a keyset cursor:
    /// the last id of the previous page), at most `limit`.
    func list(_ filter: CredentialFilter, after: UUID?, limit: Int) throws -> [StoredCredential]
    /// Returns whether a credential was removed.
    @discardableResult
    func delete(_ id: UUID) throws -> Bool
}

extension TenantTransaction {
    /// The tenant's stored credentials (the issue-credential plugin's repository).
    public var credentials: any CredentialRepository {
        get throws { try repository(CredentialRepository.self) }
    }
}
