import AerieCore
import Foundation

extension KeyWallet {
    /// `document` with a Linked Data proof made by the tenant's did:key `did` (its private key
    /// opened only for this signature): a holder's presentation or any document the tenant signs.
    /// `notFound` when the tenant does not hold the key.
    public func signLinkedData(
        _ document: JSONValue, suite: ProofSuite, did: String, purpose: ProofPurpose, created: Date = Date()
    ) async throws -> JSONValue {
        let verkey = try DIDKey.verkey(from: did)
        let method = try DIDKey.keyReference(verkey: verkey)
        return try LinkedDataProofs.sign(
            document, suite: suite, key: try await keyPair(Base58.encode(verkey)), verificationMethod: method, purpose: purpose, created: created)
    }
}
