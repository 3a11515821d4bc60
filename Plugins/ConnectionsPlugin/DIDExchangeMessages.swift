import AerieCore
import AerieCrypto
import Foundation

/// The Aries RFC 0023 (didexchange 1.0 and 1.1) messages Aerie writes and reads as the requester,
/// in the shapes ACA-Py 1.2.7 and 1.7.0 accept and send (`acapy_agent/protocols/didexchange`).
public enum DIDExchangeMessages {
    /// `https://didcomm.org/didexchange/<version>/<name>`.
    public static func type(_ name: String, version: String) -> String {
        "https://didcomm.org/didexchange/\(version)/\(name)"
    }

    public static let versions = ["1.0", "1.1"]
    public static let responseTypes = versions.map { type("response", version: $0) }
    public static let problemReportTypes = versions.map { type("problem_report", version: $0) }

    /// The version (`1.0`, `1.1`) of a normalised didexchange message type, or nil.
    public static func version(of normalizedType: String) -> String? {
        let prefix = "https://didcomm.org/didexchange/"
        guard normalizedType.hasPrefix(prefix) else { return nil }
        let version = normalizedType.dropFirst(prefix.count).prefix { $0 != "/" }
        return versions.contains(String(version)) ? String(version) : nil
    }

    /// A Request whose `did` is resolvable without an attachment (a did:peer:2 carrying our key
    /// and endpoint, which both ACA-Py 1.2.7 and 1.7.0 resolve); its `@id` becomes the thread id,
    /// `pthid` is the invitation's `@id`.
    public static func request(
        version: String, id: String, label: String, did: String, invitationId: String, returnRoute: Bool = false
    ) -> JSONValue {
        var fields: [String: JSONValue] = [
            "@type": .string(type("request", version: version)),
            "@id": .string(id),
            "label": .string(label),
            "did": .string(did),
            "~thread": .object(["thid": .string(id), "pthid": .string(invitationId)]),
        ]
        if returnRoute { fields["~transport"] = .object(["return_route": .string("all")]) }
        return .object(fields)
    }

    /// The `complete` that ends the exchange (ACA-Py moves to `completed` on it); `~thread`
    /// needs both `thid` and `pthid`.
    public static func complete(version: String, id: String = UUID().uuidString.lowercased(), threadId: String,
                                parentThreadId: String) -> JSONValue {
        [
            "@type": .string(type("complete", version: version)),
            "@id": .string(id),
            "~thread": ["thid": .string(threadId), "pthid": .string(parentThreadId)],
        ]
    }

    /// Longest DID accepted in a Response (a did:peer:2 with a few services fits easily).
    static let maxDIDLength = 16 * 1024

    /// Verifies a Response's signed attachment against `invitationKey` and resolves the peer's
    /// DID to its key, endpoint and routing keys:
    /// - `did_rotate~attach` (1.1): the signed bytes are the DID; it must equal `did`, which is
    ///   resolved locally (did:peer:2);
    /// - `did_doc~attach` (1.0, and 1.1's legacy fallback): the signed bytes are the DID document
    ///   (the legacy DIDDoc ACA-Py writes, or a DID Core document).
    ///
    /// Throws `CryptoError` for a missing, bad or foreign signature (the connection fails) and
    /// `AerieError(.invalidParams)` for a malformed message.
    public static func readResponse(_ message: JSONValue, invitationKey: String) throws -> ConnectionMessages.PeerConnection {
        guard let did = message["did"]?.stringValue, !did.isEmpty, did.utf8.count <= maxDIDLength else {
            throw AerieError.invalidParams("the response has no did (or one over \(maxDIDLength) bytes)", field: "message")
        }
        if let rotate = message["did_rotate~attach"], !rotate.isNull {
            let signed = try SignedAttachment.verify(rotate, expectedSigner: invitationKey)
            guard String(decoding: signed, as: UTF8.self) == did else {
                throw CryptoError(.invalidSignature, "the signed did_rotate~attach names another DID than the response's did")
            }
            return try resolve(did: did)
        }
        if let attached = message["did_doc~attach"], !attached.isNull {
            let signed = try SignedAttachment.verify(attached, expectedSigner: invitationKey)
            let doc: JSONValue
            do {
                doc = try JSONValue(parsing: String(decoding: signed, as: UTF8.self))
            } catch {
                throw AerieError.invalidParams("the signed did_doc~attach is not a JSON DID document", field: "message")
            }
            let docId = doc["id"]?.stringValue
            guard docId == did || docId == "did:sov:\(did)" || docId.map(InvitationMatchKeys.normalizedDID) == did else {
                throw AerieError.invalidParams("the attached DID document is not the response's did", field: "message")
            }
            return try ConnectionMessages.peer(did: InvitationMatchKeys.normalizedDID(did), doc: doc)
        }
        throw CryptoError(
            .malformedSignature, "the response has neither a signed did_rotate~attach nor a signed did_doc~attach")
    }

    /// Resolves a DID that needs no resolver: did:peer:2.
    static func resolve(did: String) throws -> ConnectionMessages.PeerConnection {
        guard did.hasPrefix("did:peer:2.") else {
            throw AerieError.invalidParams(
                "the response's did \(did.prefix(40))… cannot be resolved without a signed did_doc~attach (only did:peer:2 is)",
                field: "message")
        }
        do {
            let peer = try PeerDID2(did)
            guard let service = try peer.didCommService(), let verkey = service.recipientKeys.first else {
                throw AerieError.invalidParams("the response's did:peer:2 has no DIDComm service", field: "message")
            }
            return ConnectionMessages.PeerConnection(
                did: peer.did, verkey: verkey, endpoint: service.serviceEndpoint,
                routingKeys: Array(service.routingKeys.prefix(10)))
        } catch let error as CryptoError {
            throw AerieError.invalidParams("the response's did:peer:2 is invalid: \(error.message)", field: "message")
        }
    }
}
