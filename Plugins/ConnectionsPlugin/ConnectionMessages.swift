import AerieCore
import AerieCrypto
import Foundation

/// The RFC 0160 messages Aerie writes and reads, in the legacy DIDDoc format ACA-Py parses
/// (`acapy_agent/connections/models/diddoc`).
public enum ConnectionMessages {
    public static let requestType = "https://didcomm.org/connections/1.0/request"
    public static let responseType = "https://didcomm.org/connections/1.0/response"
    public static let problemReportType = "https://didcomm.org/connections/1.0/problem_report"
    public static let notificationProblemReportType = "https://didcomm.org/notification/1.0/problem-report"
    public static let trustPingType = "https://didcomm.org/trust_ping/1.0/ping"
    public static let trustPingResponseType = "https://didcomm.org/trust_ping/1.0/ping_response"

    /// The legacy DIDDoc of an unqualified DID with one Ed25519 key and one IndyAgent service.
    public static func didDoc(did: String, verkey: String, endpoint: String) -> JSONValue {
        let qualified = "did:sov:\(did)"
        let keyId = "\(qualified)#1"
        return .object([
            "@context": .string("https://w3id.org/did/v1"),
            "id": .string(qualified),
            "publicKey": .array([
                .object([
                    "id": .string(keyId), "type": .string("Ed25519VerificationKey2018"),
                    "controller": .string(qualified), "publicKeyBase58": .string(verkey),
                ])
            ]),
            "authentication": .array([
                .object(["type": .string("Ed25519SignatureAuthentication2018"), "publicKey": .string(keyId)])
            ]),
            "service": .array([
                .object([
                    "id": .string("\(qualified);indy"), "type": .string("IndyAgent"), "priority": .int(0),
                    "recipientKeys": .array([.string(verkey)]), "routingKeys": .array([]),
                    "serviceEndpoint": .string(endpoint),
                ])
            ]),
        ])
    }

    /// A Connection Request; its `@id` becomes the thread id, `pthid` is the invitation's `@id`.
    /// With `returnRoute`, asks the inviter to answer on the same HTTP response
    /// (`~transport.return_route: all`), for an invitee whose endpoint the inviter cannot reach.
    public static func request(
        id: String, label: String, did: String, verkey: String, endpoint: String, invitationId: String,
        returnRoute: Bool = false
    ) -> JSONValue {
        var fields: [String: JSONValue] = [
            "@type": .string(requestType),
            "@id": .string(id),
            "label": .string(label),
            "connection": .object(["DID": .string(did), "DIDDoc": didDoc(did: did, verkey: verkey, endpoint: endpoint)]),
            "~thread": .object(["thid": .string(id), "pthid": .string(invitationId)]),
        ]
        if returnRoute { fields["~transport"] = .object(["return_route": .string("all")]) }
        return .object(fields)
    }

    public static let invitationType = "https://didcomm.org/connections/1.0/invitation"

    /// Our connections/1.0 invitation: one recipient key, no routing keys, our endpoint.
    public static func invitation(id: String, label: String, recipientKey: String, endpoint: String) -> JSONValue {
        .object([
            "@type": .string(invitationType), "@id": .string(id), "label": .string(label),
            "recipientKeys": .array([.string(recipientKey)]), "serviceEndpoint": .string(endpoint),
            "routingKeys": .array([]),
        ])
    }

    /// The invitation as a `?c_i=` URL on `endpoint` (base64url of its JSON, unpadded).
    public static func invitationURL(_ invitation: JSONValue, endpoint: String) -> String {
        let separator = endpoint.contains("?") ? "&" : "?"
        return endpoint + separator + "c_i=" + Base64.encodeURL(invitation.serialized())
    }

    /// The signed part of a Response: our pairwise DID and its DIDDoc.
    public static func connection(did: String, verkey: String, endpoint: String) -> JSONValue {
        .object(["DID": .string(did), "DIDDoc": didDoc(did: did, verkey: verkey, endpoint: endpoint)])
    }

    /// A Connection Response: `connection~sig` (made by the invitation key) over `connection`, on
    /// the Request's thread (and its parent, the invitation, when the Request named it).
    public static func response(id: String = UUID.random().lowercasedString, threadId: String, parentThreadId: String?,
                                signature: SignatureDecorator) -> JSONValue {
        var thread: [String: JSONValue] = ["thid": .string(threadId)]
        if let parentThreadId { thread["pthid"] = .string(parentThreadId) }
        return .object([
            "@type": .string(responseType), "@id": .string(id), "~thread": .object(thread),
            "connection~sig": signature.json,
        ])
    }

    /// What a checked Request tells the inviter.
    public struct Requester: Sendable, Hashable {
        public var peer: PeerConnection
        public var label: String?
        /// The Request's thread: its `~thread.thid`, else its `@id`.
        public var threadId: String
        /// `~thread.pthid` when given (the invitation's `@id`).
        public var parentThreadId: String?
    }

    /// Reads a Request's DID and DIDDoc (the invitee's key, endpoint and routing keys), each
    /// field within `PeerFieldLimits`. Throws `invalid_params` for a malformed Request or a DIDDoc
    /// of another DID than the Request's, `CryptoError(.invalidDID)` for a DID that does not
    /// belong to the DIDDoc's key (`PeerDIDBinding`).
    public static func readRequest(_ message: JSONValue) throws -> Requester {
        guard let id = message["@id"]?.stringValue, !id.isEmpty else {
            throw AerieError.invalidParams("the request has no @id", field: "message")
        }
        guard let connection = message["connection"],
            let did = connection["DID"]?.stringValue ?? connection["did"]?.stringValue,
            let doc = connection["DIDDoc"] ?? connection["did_doc"]
        else { throw AerieError.invalidParams("the request has no connection with a DID and DIDDoc", field: "message") }
        try PeerFieldLimits.did.require(did, name: "the request's DID")
        if let docId = doc["id"]?.stringValue, InvitationMatchKeys.normalizedDID(docId) != InvitationMatchKeys.normalizedDID(did) {
            throw AerieError.invalidParams("the request's DIDDoc is not the DIDDoc of its DID", field: "message")
        }
        return try requester(message, id: id, peer: boundPeer(did: did, doc: doc, in: "request"))
    }

    /// A Request's label and thread around its checked peer (`@id`: `id`).
    static func requester(_ message: JSONValue, id: String, peer: PeerConnection) throws -> Requester {
        let label = message["label"]?.stringValue
        if let label { try PeerFieldLimits.text.require(label, name: "the request's label") }
        let thread = message["~thread"]
        let threadId = thread?["thid"]?.stringValue ?? id
        let parentThreadId = thread?["pthid"]?.stringValue
        try PeerFieldLimits.id.require(threadId, name: "the request's ~thread.thid")
        if let parentThreadId { try PeerFieldLimits.id.require(parentThreadId, name: "the request's ~thread.pthid") }
        return Requester(peer: peer, label: label, threadId: threadId, parentThreadId: parentThreadId)
    }

    public static func trustPing(id: String = UUID.random().lowercasedString, threadId: String?) -> JSONValue {
        var fields: [String: JSONValue] = [
            "@type": .string(trustPingType), "@id": .string(id), "response_requested": .bool(false),
        ]
        if let threadId { fields["~thread"] = .object(["thid": .string(threadId)]) }
        return .object(fields)
    }

    /// The peer's side of a verified Response.
    public struct PeerConnection: Sendable, Hashable {
        public var did: String
        public var verkey: String
        public var endpoint: String
        public var routingKeys: [String]
    }

    /// Verifies a Response's `connection~sig` against `invitationKey` and reads the peer's DID,
    /// key and endpoint from its DIDDoc. Throws `CryptoError` for a bad signature or a DID that
    /// does not belong to the DIDDoc's key, `AerieError(.invalidParams)` for a malformed message.
    public static func readResponse(_ message: JSONValue, invitationKey: String) throws -> PeerConnection {
        guard let sig = message["connection~sig"] else {
            throw AerieError.invalidParams("the response has no connection~sig", field: "message")
        }
        let verified = try SignatureDecorator(json: sig).verify(expectedSigner: invitationKey)
        let connection = verified.value
        guard let did = connection["DID"]?.stringValue ?? connection["did"]?.stringValue,
            let doc = connection["DIDDoc"] ?? connection["did_doc"]
        else { throw AerieError.invalidParams("the signed connection has no DID and DIDDoc", field: "message") }
        return try boundPeer(did: did, doc: doc, in: "response")
    }

    /// The peer that `did` and its document `doc` (nil: none given) describe, once the DID is
    /// known to belong to the key: a did:peer:2/4 is resolved from itself (a document given too
    /// must name the same key), a did:peer:1 from its document, whose text as attached
    /// (`documentText`) it must be the hash of, any other DID must belong to its document's key
    /// (`PeerDIDBinding`). `message` names the message in errors.
    static func boundPeer(did: String, doc: JSONValue?, documentText: [UInt8]? = nil, in message: String) throws -> PeerConnection {
        try PeerFieldLimits.did.require(did, name: "the \(message)'s DID")
        let did = InvitationMatchKeys.normalizedDID(did)
        if PeerDID1.isPeerDID1(did) {
            guard let doc, let documentText else {
                throw AerieError.invalidParams(
                    "the \(message)'s did:peer:1 resolves only with its attached DID document (did_doc~attach), which it lacks",
                    field: "message")
            }
            try PeerDID1.verify(did, document: documentText)
            return try documentPeer(did: did, doc: doc, ownKey: true)
        }
        if PeerDIDBinding.isSelfResolving(did) {
            let peer = try DIDExchangeMessages.resolve(did: did, in: message)
            if let doc, try documentPeer(did: did, doc: doc).verkey != peer.verkey {
                throw CryptoError(.invalidDID, "the \(message)'s DID document names another key than its DID")
            }
            return peer
        }
        guard let doc else {
            throw AerieError.invalidParams(
                "the \(message)'s DID \(did.prefix(40))… cannot be resolved without a DID document (only did:peer:2 and did:peer:4 are)",
                field: "message")
        }
        let peer = try documentPeer(did: did, doc: doc)
        try PeerDIDBinding.check(did: did, verkey: peer.verkey, in: message)
        return peer
    }

    /// The first usable service of a DID document (legacy or DID Core; lowest priority first),
    /// every list and field within `PeerFieldLimits`: the key its DID must belong to is the
    /// service's first recipient key. With `ownKey`, that key must be one the document lists as
    /// its own (a did:peer:4's document names the keys of its DID).
    static func documentPeer(did: String, doc: JSONValue, ownKey: Bool = false) throws -> PeerConnection {
        guard case .object = doc else { throw AerieError.invalidParams("the DID document is not a JSON object", field: "message") }
        guard doc.serialized().count <= PeerFieldLimits.maxDocumentBytes else {
            throw AerieError.invalidParams(
                "the DID document is larger than \(PeerFieldLimits.maxDocumentBytes / 1024) KiB", field: "message")
        }
        var keysById: [String: String] = [:]
        // Legacy DIDDocs list `publicKey`; DID Core documents (didexchange) `verificationMethod`.
        for field in ["publicKey", "verificationMethod"] {
            for key in try list(doc, field) {
                guard let id = key["id"]?.stringValue else { continue }
                try PeerFieldLimits.did.require(id, name: "a DID document key id")
                if let b58 = key["publicKeyBase58"]?.stringValue {
                    try PeerFieldLimits.key.require(b58, name: "a DID document key")
                    keysById[id] = b58
                } else if let multibase = key["publicKeyMultibase"]?.stringValue {
                    try PeerFieldLimits.key.require(multibase, name: "a DID document key")
                    if let verkey = try? DIDKey.verkey(fromMultibase: multibase) { keysById[id] = Base58.encode(verkey) }
                }
            }
        }
        func resolve(_ ref: String) throws -> String {
            // A key reference may be a DID URL.
            try PeerFieldLimits.did.require(ref, name: "a DID document key reference")
            if let found = keysById[ref] { return found }
            if ref.contains("#"), !ref.hasPrefix("did:key:") {
                if let found = keysById.first(where: { $0.key.hasSuffix("#" + (ref.split(separator: "#").last ?? "")) })?.value {
                    return found
                }
            }
            return try KeyReference.verkeyBase58(from: ref)
        }
        let services = try list(doc, "service")
        guard !services.isEmpty else { throw AerieError.invalidParams("the DIDDoc has no service", field: "message") }
        let sorted = services.sorted { ($0["priority"]?.intValue ?? 0) < ($1["priority"]?.intValue ?? 0) }
        for service in sorted {
            guard let endpoint = service["serviceEndpoint"]?.stringValue ?? service["serviceEndpoint"]?["uri"]?.stringValue,
                let first = try list(service, "recipientKeys").first?.stringValue
            else { continue }
            try PeerFieldLimits.url.require(endpoint, name: "the DID document's serviceEndpoint")
            let routing = try list(service, "routingKeys").compactMap(\.stringValue).map(resolve)
            let verkey = try resolve(first)
            if ownKey, !keysById.values.contains(verkey) {
                throw CryptoError(.invalidDID, "the DID \(did.prefix(40))… names a recipient key that is not one of its own")
            }
            return PeerConnection(did: did, verkey: verkey, endpoint: endpoint, routingKeys: routing)
        }
        throw AerieError.invalidParams("the DIDDoc has no service with an endpoint and a recipient key", field: "message")
    }

    /// The entries of the list `field` of `object` (none when absent), at most
    /// `PeerFieldLimits.maxListCount`.
    private static func list(_ object: JSONValue, _ field: String) throws -> [JSONValue] {
        guard case .array(let items)? = object[field] else { return [] }
        guard items.count <= PeerFieldLimits.maxListCount else {
            throw AerieError.invalidParams(
                "the DID document's \(field) has more than \(PeerFieldLimits.maxListCount) entries", field: "message")
        }
        return items
    }

    /// A human-readable reason from a problem report (either protocol).
    public static func problemReason(_ message: JSONValue) -> String {
        if let text = message["explain"]?.stringValue ?? message["explain_ltxt"]?.stringValue { return String(text.prefix(500)) }
        if let description = message["description"] {
            if let en = description["en"]?.stringValue { return String(en.prefix(500)) }
            if let code = description["code"]?.stringValue { return String(code.prefix(200)) }
            if let text = description.stringValue { return String(text.prefix(500)) }
        }
        if let code = message["problem-code"]?.stringValue { return String(code.prefix(200)) }
        return "the peer sent a problem report"
    }

    /// `~thread.thid` or nil.
    public static func threadId(_ message: JSONValue) -> String? {
        message["~thread"]?["thid"]?.stringValue
    }
}
