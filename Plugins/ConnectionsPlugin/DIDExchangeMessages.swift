import AerieCore
import AerieCrypto
import Foundation

/// The Aries RFC 0023 (didexchange 1.0 and 1.1) messages Aerie writes and reads as the requester
/// and as the responder,
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

    /// A Request whose `did` is resolvable without an attachment (a did:peer:4 long form or a
    /// did:peer:2 carrying our key and endpoint, which both ACA-Py 1.2.7 and 1.7.0 resolve); its
    /// `@id` becomes the thread id,
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
    public static func complete(version: String, id: String = UUID.random().lowercasedString, threadId: String,
                                parentThreadId: String) -> JSONValue {
        [
            "@type": .string(type("complete", version: version)),
            "@id": .string(id),
            "~thread": ["thid": .string(threadId), "pthid": .string(parentThreadId)],
        ]
    }

    /// The Request types Aerie answers as responder.
    public static let requestTypes = versions.map { type("request", version: $0) }
    public static let completeTypes = versions.map { type("complete", version: $0) }

    /// Reads a Request (as responder), each field within `PeerFieldLimits`: its `did` resolved
    /// locally (did:peer:2, did:peer:4 long form) or from its `did_doc~attach`, which must be the
    /// DID's document (a did:peer:1 its hash) and, when signed (ACA-Py signs it with the DID's key), signed by the key it
    /// names; the DID must belong to that key (`PeerDIDBinding`), which the handler requires to be
    /// the key the Request was authcrypted with. Throws `invalid_params` for a malformed Request,
    /// `CryptoError` for a bad signature or a DID that does not belong to its key.
    public static func readRequest(_ message: JSONValue) throws -> ConnectionMessages.Requester {
        guard let id = message["@id"]?.stringValue, !id.isEmpty else {
            throw AerieError.invalidParams("the request has no @id", field: "message")
        }
        guard let did = message["did"]?.stringValue, !did.isEmpty else {
            throw AerieError.invalidParams("the request has no did", field: "message")
        }
        try PeerFieldLimits.did.require(did, name: "the request's did")
        let peer: ConnectionMessages.PeerConnection
        if let attached = message["did_doc~attach"], !attached.isNull {
            let doc = try attachedDocument(attached, did: did, in: "request")
            peer = try ConnectionMessages.boundPeer(did: did, doc: doc.json, documentText: doc.text, in: "request")
            if attached["data"]?["jws"] != nil { _ = try SignedAttachment.verify(attached, expectedSigner: peer.verkey) }
        } else {
            peer = try ConnectionMessages.boundPeer(did: did, doc: nil, in: "request")
        }
        return try ConnectionMessages.requester(message, id: id, peer: peer)
    }

    /// The DID document of an unsigned read of `did_doc~attach` (base64 JSON), which must be
    /// `did`'s (its `id` when it has one), and its text as attached (a did:peer:1 is its hash).
    private static func attachedDocument(_ attached: JSONValue, did: String, in message: String) throws -> (json: JSONValue, text: [UInt8]) {
        guard let base64 = attached["data"]?["base64"]?.stringValue, base64.utf8.count <= PeerFieldLimits.maxAttachmentBase64Bytes,
            let bytes = try? Base64.decode(base64), let doc = try? JSONValue(parsing: String(decoding: bytes, as: UTF8.self))
        else { throw AerieError.invalidParams("the did_doc~attach is not a base64 JSON document", field: "message") }
        try requireDocument(doc, of: did, in: message)
        return (doc, bytes)
    }

    /// A DID document's `id`, when it has one, must name `did` (qualified with did:sov or not).
    private static func requireDocument(_ doc: JSONValue, of did: String, in message: String) throws {
        guard let docId = doc["id"]?.stringValue else { return }
        guard InvitationMatchKeys.normalizedDID(docId) == InvitationMatchKeys.normalizedDID(did) else {
            throw AerieError.invalidParams("the attached DID document is not the \(message)'s did", field: "message")
        }
    }

    /// A didexchange Response on the Request's thread and the invitation's: 1.1 carries our `did`
    /// and `did_rotate~attach` (that DID signed by the invitation key), 1.0 our unqualified `did`
    /// and `did_doc~attach` (its legacy DIDDoc signed by the invitation key), as ACA-Py writes them.
    static func response(
        version: String, id: String = UUID.random().lowercasedString, threadId: String, parentThreadId: String?, did: String,
        signedAttachment: JSONValue
    ) -> JSONValue {
        var thread: [String: JSONValue] = ["thid": .string(threadId)]
        if let parentThreadId { thread["pthid"] = .string(parentThreadId) }
        return .object([
            "@type": .string(type("response", version: version)), "@id": .string(id), "~thread": .object(thread),
            "did": .string(did), version == "1.0" ? "did_doc~attach" : "did_rotate~attach": signedAttachment,
        ])
    }

    /// Our Response as responder, from the pairwise key `verkey` (base58) and our endpoint, its
    /// attachment signed by `invitationKey` through `sign`: 1.1 a DID in `method` (the
    /// Request's, as ACA-Py answers) and its `did_rotate~attach` over the DID as sent (a
    /// did:peer:4 in its long form); 1.0 (ACA-Py's 1.0 shape) an unqualified DID and its legacy
    /// DIDDoc as `did_doc~attach`. Answers our DID as the connection records it (a did:peer:4 in
    /// its short form: the Response is the peer's first sight of it) and the message.
    public static func signedResponse(
        version: String, method: PeerDIDMethod, threadId: String, parentThreadId: String?, verkey: String, endpoint: String,
        invitationKey: String, sign: ([UInt8]) async throws -> [UInt8]
    ) async throws -> (did: String, response: JSONValue) {
        let did: String
        let sent: String
        let attachment: JSONValue
        if version == "1.0" {
            did = KeyReference.unqualifiedDID(verkey: try Base58.decode(verkey))
            sent = did
            let doc = ConnectionMessages.didDoc(did: did, verkey: verkey, endpoint: endpoint)
            attachment = try await SignedAttachment.make(doc.serialized(), mimeType: "application/json", verkey: invitationKey, sign: sign)
        } else {
            let made = try method.make(verkey: try Base58.decode(verkey), serviceEndpoint: endpoint)
            did = made.shortForm
            sent = made.did
            attachment = try await SignedAttachment.make(Array(sent.utf8), mimeType: "text/string", verkey: invitationKey, sign: sign)
        }
        let response = response(
            version: version, threadId: threadId, parentThreadId: parentThreadId, did: sent, signedAttachment: attachment)
        return (did, response)
    }

    /// Verifies a Response's signed attachment against `invitationKey` and resolves the peer's
    /// DID to its key, endpoint and routing keys:
    /// - `did_rotate~attach` (1.1): the signed bytes are the DID; it must equal `did`, which is
    ///   resolved locally (did:peer:2, did:peer:4 long form) or, a did:peer:1, from the unsigned
    ///   `did_doc~attach` beside it (the document it is the hash of);
    /// - `did_doc~attach` (1.0, and 1.1's legacy fallback): the signed bytes are the DID document
    ///   (the legacy DIDDoc ACA-Py writes, or a DID Core document).
    ///
    /// The DID must belong to the key it resolves to (`PeerDIDBinding`).
    ///
    /// Throws `CryptoError` for a missing, bad or foreign signature or a DID that does not belong
    /// to its key (the connection fails) and `AerieError(.invalidParams)` for a malformed message.
    public static func readResponse(_ message: JSONValue, invitationKey: String) throws -> ConnectionMessages.PeerConnection {
        guard let did = message["did"]?.stringValue, !did.isEmpty else {
            throw AerieError.invalidParams("the response has no did", field: "message")
        }
        try PeerFieldLimits.did.require(did, name: "the response's did")
        if let rotate = message["did_rotate~attach"], !rotate.isNull {
            let signed = try SignedAttachment.verify(rotate, expectedSigner: invitationKey)
            guard String(decoding: signed, as: UTF8.self) == did else {
                throw CryptoError(.invalidSignature, "the signed did_rotate~attach names another DID than the response's did")
            }
            // A did:peer:1 comes with its document, which needs no signature: its hash is the
            // signed DID.
            if PeerDID1.isPeerDID1(did), let attached = message["did_doc~attach"], !attached.isNull {
                let doc = try attachedDocument(attached, did: did, in: "response")
                return try ConnectionMessages.boundPeer(did: did, doc: doc.json, documentText: doc.text, in: "response")
            }
            return try ConnectionMessages.boundPeer(did: did, doc: nil, in: "response")
        }
        if let attached = message["did_doc~attach"], !attached.isNull {
            let signed = try SignedAttachment.verify(attached, expectedSigner: invitationKey)
            let doc: JSONValue
            do {
                doc = try JSONValue(parsing: String(decoding: signed, as: UTF8.self))
            } catch {
                throw AerieError.invalidParams("the signed did_doc~attach is not a JSON DID document", field: "message")
            }
            try requireDocument(doc, of: did, in: "response")
            return try ConnectionMessages.boundPeer(did: did, doc: doc, documentText: signed, in: "response")
        }
        throw CryptoError(
            .malformedSignature, "the response has neither a signed did_rotate~attach nor a signed did_doc~attach")
    }

    /// Resolves a DID that needs no resolver: did:peer:2, did:peer:4 (long form), its service's
    /// keys and endpoint within `PeerFieldLimits`. `message` names the message in errors.
    static func resolve(did: String, in message: String) throws -> ConnectionMessages.PeerConnection {
        if did.hasPrefix("did:peer:4") {
            let doc: JSONValue
            do {
                doc = try JSONValue(parsing: String(decoding: try PeerDID4.documentJSON(did), as: UTF8.self))
            } catch let error as CryptoError {
                throw AerieError.invalidParams("the \(message)'s did:peer:4 is invalid: \(error.message)", field: "message")
            } catch {
                throw AerieError.invalidParams("the \(message)'s did:peer:4 document is not JSON", field: "message")
            }
            return try ConnectionMessages.documentPeer(did: did, doc: doc, ownKey: true)
        }
        guard did.hasPrefix("did:peer:2.") else {
            throw AerieError.invalidParams(
                "the \(message)'s did \(did.prefix(40))… cannot be resolved here (only did:peer:2 and did:peer:4 are)",
                field: "message")
        }
        let resolved: ConnectionMessages.PeerConnection
        let ownKeys: [String]
        do {
            let peer = try PeerDID2(did)
            ownKeys = peer.keys.compactMap(\.verkeyBase58)
            guard let service = try peer.didCommService(), let verkey = service.recipientKeys.first else {
                throw AerieError.invalidParams("the \(message)'s did:peer:2 has no DIDComm service", field: "message")
            }
            guard peer.keys.count <= PeerFieldLimits.maxListCount, peer.services.count <= PeerFieldLimits.maxListCount,
                service.recipientKeys.count <= PeerFieldLimits.maxListCount,
                service.routingKeys.count <= PeerFieldLimits.maxListCount
            else {
                throw AerieError.invalidParams(
                    "the \(message)'s did:peer:2 has more than \(PeerFieldLimits.maxListCount) keys, services or routing keys",
                    field: "message")
            }
            try PeerFieldLimits.url.require(service.serviceEndpoint, name: "the \(message)'s did:peer:2 serviceEndpoint")
            resolved = ConnectionMessages.PeerConnection(
                did: peer.did, verkey: verkey, endpoint: service.serviceEndpoint, routingKeys: service.routingKeys)
        } catch let error as CryptoError {
            throw AerieError.invalidParams("the \(message)'s did:peer:2 is invalid: \(error.message)", field: "message")
        }
        guard ownKeys.contains(resolved.verkey) else {
            throw CryptoError(.invalidDID, "the \(message)'s did:peer:2 names a recipient key that is not one of its own")
        }
        return resolved
    }
}
