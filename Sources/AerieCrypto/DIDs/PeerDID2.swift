import Foundation

/// A parsed `did:peer:2` (numalgo 2): the keys and services it carries, no resolver needed.
///
/// Elements follow `did:peer:2` separated by `.`; each starts with a purpose code: `V`
/// authentication, `E` key agreement, `A` assertion, `I` / `D` capability invocation /
/// delegation (a `z` multibase multikey), or `S` a service (unpadded base64url JSON with the
/// abbreviations `t` type, `s` serviceEndpoint, `r` routingKeys, `a` accept, `dm`
/// DIDCommMessaging). Keys get ids `#key-1`, `#key-2`… in order; services without an id get
/// `#service`, `#service-1`…, as the did:peer spec and ACA-Py's resolver do.
public struct PeerDID2: Sendable, Hashable {
    public enum Purpose: Character, Sendable, Hashable {
        case authentication = "V"
        case keyAgreement = "E"
        case assertion = "A"
        case capabilityInvocation = "I"
        case capabilityDelegation = "D"
    }

    public enum KeyType: Sendable, Hashable {
        case ed25519
        case x25519
        /// A multikey of another type (its multicodec prefix is kept in `publicKey`).
        case other
    }

    public struct Key: Sendable, Hashable {
        /// `#key-N`, 1-based in order of appearance.
        public let id: String
        public let purpose: Purpose
        /// The element as written, e.g. `z6Mk…`.
        public let multibase: String
        public let type: KeyType
        /// The raw public key (without multicodec prefix for Ed25519 / X25519).
        public let publicKey: [UInt8]

        /// The base58 verkey, for Ed25519 keys.
        public var verkeyBase58: String? { type == .ed25519 ? Base58.encode(publicKey) : nil }
    }

    public struct Service: Sendable, Hashable {
        public let id: String
        /// Expanded: `DIDCommMessaging`, `did-communication`, ….
        public let type: String
        /// The endpoint URI (from a string or an object's `uri`).
        public let serviceEndpoint: String
        /// As written: `#key-1`, a DID URL, a did:key or a base58 verkey.
        public let recipientKeys: [String]
        public let routingKeys: [String]
        public let accept: [String]
    }

    public let did: String
    public let keys: [Key]
    public let services: [Service]

    public init(_ did: String) throws {
        guard did.hasPrefix("did:peer:2.") else {
            throw CryptoError(.invalidDID, "not a did:peer:2", details: did)
        }
        // A DID URL's fragment or query is not part of the DID.
        let bare = did.prefix { $0 != "#" && $0 != "?" }
        self.did = String(bare)
        var keys: [Key] = []
        var services: [Service] = []
        var unnamedServices = 0
        for element in bare.dropFirst("did:peer:2.".count).split(separator: ".", omittingEmptySubsequences: false) {
            guard let code = element.first else { throw CryptoError(.invalidDID, "did:peer:2 has an empty element") }
            let value = String(element.dropFirst())
            if code == "S" {
                for object in try Self.serviceObjects(value) {
                    let service = try Self.service(object, unnamed: &unnamedServices)
                    services.append(service)
                }
            } else if let purpose = Purpose(rawValue: code) {
                keys.append(try Self.key(value, purpose: purpose, index: keys.count + 1))
            } else {
                throw CryptoError(.invalidDID, "did:peer:2 element has unknown purpose '\(code)'")
            }
        }
        guard !keys.isEmpty || !services.isEmpty else { throw CryptoError(.invalidDID, "did:peer:2 carries nothing") }
        self.keys = keys
        self.services = services
    }

    /// The Ed25519 verkey (base58) of a key reference found in this DID's services:
    /// `#key-1`, `<this did>#key-1`, a did:key or a raw base58 verkey.
    public func verkeyBase58(forReference reference: String) throws -> String {
        var fragment: Substring?
        if reference.hasPrefix("#") {
            fragment = reference.dropFirst()
        } else if reference.hasPrefix(did + "#") {
            fragment = reference.dropFirst(did.count + 1)
        }
        if let fragment {
            guard let key = keys.first(where: { $0.id.dropFirst() == fragment }) else {
                throw CryptoError(.invalidDID, "did:peer:2 has no key #\(fragment)")
            }
            guard let verkey = key.verkeyBase58 else {
                throw CryptoError(.invalidDID, "did:peer:2 key #\(fragment) is not Ed25519")
            }
            return verkey
        }
        return try KeyReference.verkeyBase58(from: reference)
    }

    /// Where and how to send DIDComm v1 messages to this DID: the first `did-communication`
    /// service, else the first `DIDCommMessaging`. Recipient keys default to the Ed25519
    /// authentication (`V`) keys when the service names none. Nil when there is no such service.
    public func didCommService() throws -> DIDCommService? {
        let service =
            services.first { $0.type == "did-communication" }
            ?? services.first { $0.type == "DIDCommMessaging" }
        guard let service else { return nil }
        var recipients = try service.recipientKeys.map { try verkeyBase58(forReference: $0) }
        if recipients.isEmpty {
            recipients = keys.filter { $0.purpose == .authentication }.compactMap(\.verkeyBase58)
        }
        guard !recipients.isEmpty else { throw CryptoError(.invalidDID, "did:peer:2 has no Ed25519 recipient key") }
        return DIDCommService(
            serviceEndpoint: service.serviceEndpoint,
            recipientKeys: recipients,
            routingKeys: try service.routingKeys.map { try verkeyBase58(forReference: $0) })
    }

    /// A did:peer:2 for one of our keys, shaped as ACA-Py's `create_did_peer_2` makes them:
    /// `.V` the Ed25519 verkey (`#key-1`), `.E` its X25519 form (`#key-2`), and one
    /// `did-communication` service with `recipientKeys: ["#key-1"]` and routing keys as did:key
    /// references.
    public static func make(verkey: [UInt8], serviceEndpoint: String, routingKeys: [String] = []) throws -> String {
        let x25519 = try Ed25519.x25519PublicKey(fromVerkey: verkey)
        var service: [UInt8] = Array(
            ##"{"id":"#didcomm-0","t":"did-communication","priority":0,"recipientKeys":["#key-1"],"r":["##.utf8)
        for (index, key) in routingKeys.enumerated() {
            if index > 0 { service.append(UInt8(ascii: ",")) }
            service += JSONText.quoted(try DIDKey.keyReference(verkey: KeyReference.verkey(from: key)))
        }
        service += Array(#"],"s":"#.utf8)
        service += JSONText.quoted(serviceEndpoint)
        service.append(UInt8(ascii: "}"))
        return "did:peer:2.V" + (try DIDKey.multibase(verkey: verkey))
            + ".Ez" + Base58.encode(DIDKey.x25519Prefix + x25519)
            + ".S" + Base64.encodeURL(service)
    }

    // MARK: - Parsing

    private static func key(_ value: String, purpose: Purpose, index: Int) throws -> Key {
        guard value.first == "z", let bytes = try? Base58.decode(String(value.dropFirst())), bytes.count > 2 else {
            throw CryptoError(.invalidDID, "did:peer:2 key is not a base58btc multikey", details: String(value.prefix(100)))
        }
        let type: KeyType
        var publicKey = bytes
        switch (bytes[0], bytes[1]) {
        case (0xED, 0x01) where bytes.count == 34:
            type = .ed25519
            publicKey = Array(bytes[2...])
        case (0xEC, 0x01) where bytes.count == 34:
            type = .x25519
            publicKey = Array(bytes[2...])
        default:
            type = .other
        }
        return Key(id: "#key-\(index)", purpose: purpose, multibase: value, type: type, publicKey: publicKey)
    }

    private static func serviceObjects(_ value: String) throws -> [[String: Any]] {
        let json: Any
        do {
            let bytes = try Base64.decode(value)
            json = try JSONSerialization.jsonObject(with: Data(bytes))
        } catch {
            throw CryptoError(.invalidDID, "did:peer:2 service is not base64url JSON")
        }
        if let object = json as? [String: Any] { return [object] }
        if let array = json as? [[String: Any]] { return array }
        throw CryptoError(.invalidDID, "did:peer:2 service is not a JSON object")
    }

    private static let abbreviations = ["t": "type", "s": "serviceEndpoint", "r": "routingKeys", "a": "accept"]

    private static func expand(_ object: [String: Any]) -> [String: Any] {
        var out: [String: Any] = [:]
        for (key, value) in object {
            out[abbreviations[key] ?? key] = value
        }
        return out
    }

    private static func service(_ raw: [String: Any], unnamed: inout Int) throws -> Service {
        let object = expand(raw)
        guard var type = object["type"] as? String else {
            throw CryptoError(.invalidDID, "did:peer:2 service has no type")
        }
        if type == "dm" { type = "DIDCommMessaging" }
        var endpointURI: String?
        var routingKeys = object["routingKeys"] as? [String] ?? []
        var accept = object["accept"] as? [String] ?? []
        switch object["serviceEndpoint"] {
        case let uri as String:
            endpointURI = uri
        case let endpoint as [String: Any]:
            let endpoint = expand(endpoint)
            endpointURI = endpoint["uri"] as? String
            if routingKeys.isEmpty { routingKeys = endpoint["routingKeys"] as? [String] ?? [] }
            if accept.isEmpty { accept = endpoint["accept"] as? [String] ?? [] }
        case let endpoints as [Any]:
            // DID Core allows a list; take the first usable URI.
            for case let candidate in endpoints {
                if let uri = candidate as? String {
                    endpointURI = uri
                    break
                }
                if let endpoint = candidate as? [String: Any], let uri = expand(endpoint)["uri"] as? String {
                    endpointURI = uri
                    routingKeys = routingKeys.isEmpty ? expand(endpoint)["routingKeys"] as? [String] ?? [] : routingKeys
                    break
                }
            }
        default:
            break
        }
        guard let endpointURI else { throw CryptoError(.invalidDID, "did:peer:2 service has no serviceEndpoint") }
        let id: String
        if let given = object["id"] as? String {
            id = given
        } else {
            id = unnamed == 0 ? "#service" : "#service-\(unnamed)"
            unnamed += 1
        }
        return Service(
            id: id, type: type, serviceEndpoint: endpointURI,
            recipientKeys: object["recipientKeys"] as? [String] ?? [], routingKeys: routingKeys, accept: accept)
    }
}
