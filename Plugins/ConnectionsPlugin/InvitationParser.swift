import AerieCore
import AerieCrypto

/// Reads an invitation JSON object of any kind the seeds describe into an `Invitation`.
///
/// Pure and bounded: sizes, list lengths and string lengths are checked before use, and every
/// problem is an `invalid_invitation` (or `unsupported_invitation`) error naming the field.
public enum InvitationParser {
    public static let didcommPrefix = "https://didcomm.org/"
    public static let legacyPrefix = "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/"

    /// Parses JSON text (at most `InvitationLimits.maxInvitationBytes`).
    public static func parse(text: String) throws -> Invitation {
        guard text.utf8.count <= InvitationLimits.maxInvitationBytes else { throw tooLarge() }
        let json: JSONValue
        do {
            json = try JSONValue(parsing: text)
        } catch {
            throw AerieError(.invalidInvitation, "the invitation is not valid JSON", field: "invitation", details: "\(error)")
        }
        return try parse(json)
    }

    /// Parses a JSON object.
    public static func parse(_ json: JSONValue) throws -> Invitation {
        guard case .object(let object) = json else {
            throw invalid("the invitation must be a JSON object", field: "invitation")
        }
        guard json.serialized().count <= InvitationLimits.maxInvitationBytes else { throw tooLarge() }
        let fields = InvitationFields(object)
        if let typeValue = fields.value("@type") {
            guard case .string(let type) = typeValue else { throw invalid("@type must be a string", field: "@type") }
            try PeerFieldLimits.url.check(type, field: "@type")
            switch try messageKind(type) {
            case .aries: return try parseAries(fields, type: type, json: json)
            case .outOfBand: return try parseOutOfBand(fields, type: type, json: json)
            case .proprietary, .proprietaryAbbreviated: preconditionFailure("messageKind returns Aries kinds only")
            }
        }
        if fields.has("connReqId") || fields.has("senderDetail") {
            return try parseProprietary(fields, json: json)
        }
        if fields.has("s") || fields.has("sa") {
            return try parseAbbreviated(fields, json: json)
        }
        throw invalid("the invitation has no @type", field: "@type")
    }

    /// The kind of invitation an `@type` names, under either prefix; any minor version of a
    /// supported major version is read as that version (RFC 0003 semver).
    static func messageKind(_ type: String) throws -> Invitation.Kind {
        let rest: Substring
        if type.hasPrefix(didcommPrefix) {
            rest = type.dropFirst(didcommPrefix.count)
        } else if type.hasPrefix(legacyPrefix) {
            rest = type.dropFirst(legacyPrefix.count)
        } else {
            throw invalid("@type '\(type)' is not a DIDComm message type this server reads", field: "@type")
        }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2] == "invitation" else {
            throw invalid("@type '\(type)' is not an invitation", field: "@type")
        }
        let major = parts[1].split(separator: ".", maxSplits: 1).first.flatMap { Int($0) }
        switch parts[0] {
        case "connections" where major == 1: return .aries
        case "out-of-band" where major == 1: return .outOfBand
        case "connections", "out-of-band":
            throw unsupported("\(parts[0]) version \(parts[1]) invitations are not supported", field: "@type")
        default:
            throw unsupported("invitations of the '\(parts[0])' protocol are not supported", field: "@type")
        }
    }

    // MARK: - Aries RFC 0160

    private static func parseAries(_ fields: InvitationFields, type: String, json: JSONValue) throws -> Invitation {
        let id = try fields.requiredString("@id", limit: .id, missing: "the invitation has no @id")
        let publicDid = try fields.string("did", limit: .did)
        let recipientKeys = try keys(fields, "recipientKeys")
        let routingKeys = try keys(fields, "routingKeys")
        var endpoint = try fields.string("serviceEndpoint", limit: .url)
        if publicDid == nil {
            // A key invitation must say where and to whom to send the request.
            guard !recipientKeys.isEmpty else {
                throw invalid("the invitation has no recipient keys", field: "recipientKeys")
            }
            guard let given = endpoint, !given.isEmpty else {
                throw invalid("the invitation has no serviceEndpoint", field: "serviceEndpoint")
            }
            endpoint = given
        }
        if let endpoint { try checkEndpoint(endpoint, field: "serviceEndpoint") }
        if let publicDid, !isUnqualifiedDID(publicDid) { try checkDID(publicDid, field: "did") }
        return Invitation(
            kind: .aries, type: type, id: id,
            label: try fields.string("label", limit: .text),
            logoUrl: try fields.string("imageUrl", limit: .url) ?? fields.string("profileUrl", limit: .url),
            publicDid: publicDid, recipientKeys: recipientKeys, serviceEndpoint: endpoint, routingKeys: routingKeys,
            json: json)
    }

    // MARK: - Aries RFC 0434

    private static func parseOutOfBand(_ fields: InvitationFields, type: String, json: JSONValue) throws -> Invitation {
        let id = try fields.requiredString("@id", limit: .id, missing: "the invitation has no @id")
        let handshakeProtocols = try fields.strings("handshake_protocols", limit: .url)
        let accept = try fields.strings("accept", limit: .url)

        // RFC 0434 says `requests~attach`; the seeds (and some agents) write `request~attach`.
        var attachments: [JSONValue] = []
        for key in ["requests~attach", "request~attach"] {
            for (index, item) in (try fields.array(key) ?? []).enumerated() {
                let entry = try InvitationFields(item, path: "\(key)[\(index)]")
                guard entry.has("data") else {
                    throw invalid("\(key)[\(index)] has no data", field: entry.path("data"))
                }
                _ = try entry.object("data")
                attachments.append(item)
            }
        }
        guard attachments.count <= PeerFieldLimits.maxListCount else {
            throw invalid("the invitation has more than \(PeerFieldLimits.maxListCount) attachments", field: "requests~attach")
        }
        // Seed 004: neither a handshake nor an attached request is an invalid invitation.
        guard !handshakeProtocols.isEmpty || !attachments.isEmpty else {
            throw invalid(
                "the out-of-band invitation has neither handshake_protocols nor requests~attach",
                field: "handshake_protocols")
        }

        // RFC 0434 says `services`; the seeds write `service`.
        let servicesKey = fields.has("services") ? "services" : "service"
        let entries = try fields.array(servicesKey) ?? []
        guard !entries.isEmpty else { throw invalid("the invitation has no services", field: "services") }
        let services = try entries.enumerated().map { index, entry in
            try service(entry, field: "\(servicesKey)[\(index)]")
        }
        let usable = services.first(where: \.isUsable)
        if usable == nil { try checkResolvable(services, field: servicesKey) }
        // A did:peer:4 names its peer in either form (a short form can only be the one of a long
        // form seen before): the short form is the key matching compares, so a later invitation
        // naming it finds the connection the first made.
        let publicDid = services.first { $0.did.map(PeerDID4.isPeerDID4) == true }?.did.map(PeerDID4.shortForm)
            ?? services.first { $0.did != nil && !$0.isUsable }?.did

        return Invitation(
            kind: .outOfBand, type: type, id: id,
            label: try fields.string("label", limit: .text),
            logoUrl: try fields.string("imageUrl", limit: .url) ?? fields.string("profileUrl", limit: .url),
            goal: try fields.string("goal", limit: .text),
            goalCode: try fields.string("goal_code", limit: .name),
            publicDid: publicDid,
            recipientKeys: usable?.recipientKeys ?? [],
            serviceEndpoint: usable?.serviceEndpoint,
            routingKeys: usable?.routingKeys ?? [],
            handshakeProtocols: handshakeProtocols, accept: accept, services: services, attachments: attachments,
            json: json)
    }

    /// One `services` entry: an inline object, or a DID (did:peer:2 and did:peer:4 in its long
    /// form read here, others kept for `checkResolvable` or a resolver).
    private static func service(_ entry: JSONValue, field: String) throws -> Invitation.Service {
        if case .string(let did) = entry {
            try PeerFieldLimits.did.check(did, field: field)
            try checkDID(did, field: field)
            if PeerDID4.isLongForm(did) { return try peerDID4Service(did, field: field) }
            guard did.hasPrefix("did:peer:2.") else { return Invitation.Service(did: did) }
            do {
                let peer = try PeerDID2(did)
                guard let service = try peer.didCommService() else {
                    throw invalid("\(field) is a did:peer:2 without a DIDComm service", field: field)
                }
                try checkEndpoint(service.serviceEndpoint, field: field)
                guard peer.keys.count <= PeerFieldLimits.maxListCount, peer.services.count <= PeerFieldLimits.maxListCount,
                    service.recipientKeys.count <= PeerFieldLimits.maxListCount,
                    service.routingKeys.count <= PeerFieldLimits.maxListCount
                else {
                    throw invalid(
                        "\(field) has more than \(PeerFieldLimits.maxListCount) keys, services or routing keys", field: field)
                }
                // Its service must send to its own keys, as a handshake's did:peer:2 must
                // (`PeerDIDBinding`): the DID shown for a connection made from it is its key's.
                let own = Set(peer.keys.compactMap(\.verkeyBase58))
                guard service.recipientKeys.allSatisfy(own.contains) else {
                    throw invalid("\(field) is a did:peer:2 whose service names a key that is not its own", field: field)
                }
                return Invitation.Service(
                    did: did, type: "did-communication", serviceEndpoint: service.serviceEndpoint,
                    recipientKeys: service.recipientKeys, routingKeys: service.routingKeys)
            } catch let error as CryptoError {
                throw AerieError(
                    .invalidInvitation, "\(field) is not a usable did:peer:2: \(error.message)", field: field,
                    details: String(reflecting: error))
            }
        }
        let fields = try InvitationFields(entry, path: field)
        let recipientKeys = try keys(fields, "recipientKeys")
        guard !recipientKeys.isEmpty else {
            throw invalid("\(field) has no recipient keys", field: fields.path("recipientKeys"))
        }
        let endpoint: String
        switch fields.value("serviceEndpoint") {
        case .string(let uri)?:
            try PeerFieldLimits.url.check(uri, field: fields.path("serviceEndpoint"))
            endpoint = uri
        case .object?:
            // DID Core / DIDComm v2 style `{"uri": …}`.
            let object = try fields.object("serviceEndpoint")!
            endpoint = try object.requiredString("uri", limit: .url, missing: "\(field).serviceEndpoint has no uri")
        case nil:
            throw invalid("\(field) has no serviceEndpoint", field: fields.path("serviceEndpoint"))
        default:
            throw invalid("\(field).serviceEndpoint must be a URL string", field: fields.path("serviceEndpoint"))
        }
        try checkEndpoint(endpoint, field: fields.path("serviceEndpoint"))
        return Invitation.Service(
            id: try fields.string("id", limit: .id), type: try fields.string("type", limit: .name),
            serviceEndpoint: endpoint, recipientKeys: recipientKeys, routingKeys: try keys(fields, "routingKeys"))
    }

    /// A did:peer:4 service entry, resolved from the document its long form carries (the same
    /// resolution a didexchange Request's DID gets).
    private static func peerDID4Service(_ did: String, field: String) throws -> Invitation.Service {
        let peer: ConnectionMessages.PeerConnection
        do {
            peer = try DIDExchangeMessages.resolve(did: did, in: "invitation")
        } catch let error as AerieError {
            throw AerieError(
                .invalidInvitation, "\(field) is not a usable did:peer:4: \(error.message)", field: field,
                details: String(reflecting: error))
        } catch {
            throw AerieError(
                .invalidInvitation, "\(field) is not a usable did:peer:4", field: field, details: String(reflecting: error))
        }
        try checkEndpoint(peer.endpoint, field: field)
        return Invitation.Service(
            did: did, type: "did-communication", serviceEndpoint: peer.endpoint,
            recipientKeys: [peer.verkey], routingKeys: peer.routingKeys)
    }

    /// With no usable service, a peer DID this server cannot resolve is refused by name rather
    /// than read as a public DID (which has no endpoint either).
    private static func checkResolvable(_ services: [Invitation.Service], field: String) throws {
        for (index, service) in services.enumerated() {
            guard let did = service.did else { continue }
            let entry = "\(field)[\(index)]"
            // A did:peer:4 short form stays: it names a connection made from its long form, if
            // the tenant has one (`Invitation.usableService` refuses it otherwise).
            if PeerDID1.isPeerDID1(did) {
                throw unsupported(
                    "\(entry) is a did:peer:1, which resolves only with the DID document it is the hash of, and an invitation cannot carry one",
                    field: entry)
            }
            if did.hasPrefix("did:peer:") && !PeerDID4.isPeerDID4(did) && !did.hasPrefix("did:peer:2.") {
                throw unsupported(
                    "\(entry) is a \(did.prefix(10)) DID, which needs a resolver this server does not have (did:peer:2 and the long form of did:peer:4 are read)",
                    field: entry)
            }
        }
    }

    // MARK: - Evernym proprietary

    private static func parseProprietary(_ fields: InvitationFields, json: JSONValue) throws -> Invitation {
        let id = try fields.requiredString("connReqId", limit: .id, missing: "the invitation has no connReqId")
        guard let sender = try fields.object("senderDetail") else {
            throw invalid("the invitation has no senderDetail", field: "senderDetail")
        }
        let verkey = try requiredKey(sender, "verKey")
        _ = try sender.string("DID", limit: .did)
        if let proof = try sender.object("agentKeyDlgProof") {
            _ = try proof.string("agentDID", limit: .did)
            _ = try proof.string("agentDelegatedKey", limit: .key)
            _ = try proof.string("signature", limit: .text)
        }
        let agency = try fields.object("senderAgencyDetail")
        let agencyKey = try agency.flatMap { try optionalKey($0, "verKey") }
        let endpoint = try agency?.string("endpoint", limit: .url)
        _ = try agency?.string("DID", limit: .did)
        try checkProprietaryStatus(fields, code: "statusCode", message: "statusMsg")
        _ = try fields.string("targetName", limit: .text)
        _ = try fields.string("threadId", limit: .id)
        _ = try fields.string("version", limit: .name)
        return Invitation(
            kind: .proprietary, id: id,
            label: try sender.string("name", limit: .text),
            logoUrl: try sender.string("logoUrl", limit: .url),
            publicDid: try sender.string("publicDID", limit: .did),
            recipientKeys: [verkey], serviceEndpoint: endpoint, routingKeys: agencyKey.map { [$0] } ?? [],
            json: json)
    }

    private static func parseAbbreviated(_ fields: InvitationFields, json: JSONValue) throws -> Invitation {
        let id = try fields.requiredString("id", limit: .id, missing: "the invitation has no id")
        guard let sender = try fields.object("s") else { throw invalid("the invitation has no s (sender)", field: "s") }
        let verkey = try requiredKey(sender, "v")
        _ = try sender.string("d", limit: .did)
        if let proof = try sender.object("dp") {
            _ = try proof.string("d", limit: .did)
            _ = try proof.string("k", limit: .key)
            _ = try proof.string("s", limit: .text)
        }
        let agency = try fields.object("sa")
        let agencyKey = try agency.flatMap { try optionalKey($0, "v") }
        let endpoint = try agency?.string("e", limit: .url)
        _ = try agency?.string("d", limit: .did)
        try checkProprietaryStatus(fields, code: "sc", message: "sm")
        _ = try fields.string("t", limit: .text)
        _ = try fields.string("threadId", limit: .id)
        _ = try fields.string("version", limit: .name)
        return Invitation(
            kind: .proprietaryAbbreviated, id: id,
            label: try sender.string("n", limit: .text),
            logoUrl: try sender.string("l", limit: .url),
            publicDid: try sender.string("publicDID", limit: .did),
            recipientKeys: [verkey], serviceEndpoint: endpoint, routingKeys: agencyKey.map { [$0] } ?? [],
            json: json)
    }

    private static func checkProprietaryStatus(_ fields: InvitationFields, code: String, message: String) throws {
        _ = try fields.string(code, limit: .name)
        _ = try fields.string(message, limit: .text)
    }

    // MARK: - Keys, DIDs, endpoints

    /// A key list normalised to base58 verkeys.
    private static func keys(_ fields: InvitationFields, _ key: String) throws -> [String] {
        try fields.strings(key, limit: .key).enumerated().map { index, reference in
            try verkey(reference, field: "\(fields.path(key))[\(index)]")
        }
    }

    private static func requiredKey(_ fields: InvitationFields, _ key: String) throws -> String {
        guard let verkey = try optionalKey(fields, key) else {
            throw invalid("the invitation has no recipient key", field: fields.path(key))
        }
        return verkey
    }

    private static func optionalKey(_ fields: InvitationFields, _ key: String) throws -> String? {
        guard let reference = try fields.string(key, limit: .key) else { return nil }
        return try verkey(reference, field: fields.path(key))
    }

    /// A base58 verkey or a `did:key` (with or without `#fragment`) as a base58 verkey.
    static func verkey(_ reference: String, field: String) throws -> String {
        do {
            return try KeyReference.verkeyBase58(from: reference)
        } catch {
            throw AerieError(
                .invalidInvitation, "\(field) is not an Ed25519 verkey (base58 or did:key)", field: field,
                details: String(reflecting: error))
        }
    }

    private static func checkDID(_ did: String, field: String) throws {
        let parts = did.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "did", !parts[1].isEmpty, !parts[2].isEmpty,
            parts[1].utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) })
        else { throw invalid("\(field) is not a DID", field: field) }
    }

    /// An Indy-style unqualified DID: base58 of 16 bytes (21 or 22 characters).
    static func isUnqualifiedDID(_ did: String) -> Bool {
        (21...22).contains(did.utf8.count) && (try? Base58.decode(did).count == 16) == true
    }

    /// DIDComm v1 endpoints: http(s) or ws(s) URLs with a host.
    static func checkEndpoint(_ endpoint: String, field: String) throws {
        try PeerFieldLimits.url.check(endpoint, field: field)
        // Made only when thrown: every invitation read passes here.
        var bad: AerieError { invalid("\(field) must be an http(s) or ws(s) URL", field: field) }
        let utf8 = endpoint.utf8
        guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")) else { throw bad }
        let scheme = endpoint[..<colon].lowercased()
        guard ["http", "https", "ws", "wss"].contains(scheme), utf8[colon...].starts(with: "://".utf8) else { throw bad }
        let afterScheme = endpoint[utf8.index(colon, offsetBy: 3)...]
        var authority = afterScheme.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        let host: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw bad }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let rest = authority[authority.index(after: close)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && rest.dropFirst().allSatisfy(\.isNumber)) else { throw bad }
        } else {
            let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            host = parts[0]
            if parts.count == 2 { guard !parts[1].isEmpty, parts[1].allSatisfy(\.isNumber) else { throw bad } }
        }
        guard !host.isEmpty else { throw bad }
    }

    private static func tooLarge() -> AerieError {
        invalid("the invitation is larger than \(InvitationLimits.maxInvitationBytes / 1024) KiB", field: "invitation")
    }
}
