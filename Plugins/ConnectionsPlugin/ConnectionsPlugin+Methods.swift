import AerieCore
import AerieCrypto
import Foundation

extension ConnectionsPlugin {
    func registerConnectionMethods(with router: inout MethodRouter) throws {
        let plugin = self
        let service = self.service
        try router.register(
            "connections.createWithInvite", summary: "Stores a connection for an invitation (state 1, initialized)."
        ) { (params: InvitationParams, tenant: TenantContext) in
            let invitation = try await plugin.read(ParseInvitationParams(invitation: params.invitation, url: params.url))
            let (record, existing) = try await service.create(invitation, tenant: tenant)
            var view = ConnectionView(record)
            if existing { view.existing = true }
            return view
        }
        try router.register(
            "connections.connect",
            summary: "Makes a pairwise DID and key and sends the Connection Request (state 2, requested)."
        ) { (params: ConnectParams, tenant: TenantContext) in
            ConnectionView(
                try await service.connect(
                    try params.id(), label: params.label, returnRoute: params.returnRoute ?? false,
                    didMethod: try PeerDIDMethod.parameter(params.didMethod), tenant: tenant))
        }
        try router.register(
            "connections.updateState", summary: "Applies a Response or problem report waiting in the mailbox; answers the state."
        ) { (params: ConnectionIdParams, tenant: TenantContext) in
            ConnectionView(try await service.updateState(try params.id(), tenant: tenant))
        }
        try router.register(
            "connections.updateStateWithMessage",
            summary: "Applies a pushed message (the decrypted payload, or a mailbox entry with decryptedPayload)."
        ) { (params: UpdateWithMessageParams, tenant: TenantContext) in
            let id = try ConnectionIdParams(connectionId: params.connectionId).id()
            let payload = try params.payload()
            guard let updated = try await service.apply(payload, toConnection: id, mailboxUid: nil, tenant: tenant) else {
                throw AerieError.notFound("no connection \(params.connectionId)")
            }
            return ConnectionView(updated)
        }
        try router.register("connections.get", summary: "A connection and its state.") {
            (params: ConnectionIdParams, tenant: TenantContext) in
            try await service.view(try params.id(), tenant: tenant)
        }
        try router.register("connections.getPwDid", summary: "The pairwise DID of a connection (after connect).") {
            (params: ConnectionIdParams, tenant: TenantContext) in
            let record = try await service.load(try params.id(), tenant: tenant)
            guard let did = record.myDid else { throw AerieError(.conflict, "the connection has no pairwise DID until connect") }
            return PwDidResult(pwDid: did)
        }
        try router.register(
            "connections.inviteDetails", summary: "The invitation a connection was made from, as received."
        ) { (params: ConnectionIdParams, tenant: TenantContext) in
            try await service.load(try params.id(), tenant: tenant).invitation
        }
        try router.register(
            "connections.serialize", summary: "Exports a connection's state object (no private keys)."
        ) { (params: ConnectionIdParams, tenant: TenantContext) in
            let record = try await service.load(try params.id(), tenant: tenant)
            return SerializedConnection(version: SerializedConnection.currentVersion, connection: try JSONValue(encoding: record))
        }
        try router.register(
            "connections.deserialize",
            summary: "Imports a serialized connection; its pairwise key must already be in this tenant's wallet."
        ) { (params: DeserializeParams, tenant: TenantContext) in
            let serialized = try params.serialized.decode(as: SerializedConnection.self)
            guard serialized.version == SerializedConnection.currentVersion else {
                throw AerieError.invalidParams("unsupported serialization version \(serialized.version)", field: "serialized")
            }
            let record: ConnectionRecord
            do {
                record = try serialized.connection.decode(as: ConnectionRecord.self)
            } catch {
                throw AerieError.invalidParams("serialized.connection is not a serialized connection", field: "serialized")
            }
            let imported = try await service.importRecord(record, tenant: tenant)
            var view = ConnectionView(imported.record)
            if imported.existing { view.existing = true }
            return view
        }
        try router.register("connections.list", summary: "Connections in id order, by keyset cursor; optionally in one state.") {
            (params: ListParams, tenant: TenantContext) in
            let limit = min(max(params.limit ?? 100, 1), 500)
            let state = try params.stateFilter()
            let after = try params.after.map { raw -> UUID in
                guard let id = UUID(text: raw) else { throw AerieError.invalidParams("after must be a connection id", field: "after") }
                return id
            }
            let rows = try await service.list(after: after, state: state, limit: limit, tenant: tenant)
            return ConnectionPage(
                connections: rows.map(ConnectionView.init),
                next: rows.count == limit ? rows.last?.id.lowercasedString : nil)
        }
        try router.register(
            "connections.findExisting", summary: "The tenant's connection matching an invitation by @id, public DID or first key."
        ) { (params: InvitationParams, tenant: TenantContext) in
            let invitation = try await plugin.read(ParseInvitationParams(invitation: params.invitation, url: params.url))
            let found = try await service.findExisting(InvitationMatchKeys(invitation), tenant: tenant)
            return ExistingResult(
                connectionId: found?.record.id.lowercasedString, match: found?.match.rawValue,
                connection: found.map { ConnectionView($0.record) })
        }
        try router.register(
            "connections.accept",
            summary: "The whole invitee flow: read, reuse an existing connection, or create and connect; with wait, until accepted (bounded)."
        ) { (params: AcceptParams, tenant: TenantContext) in
            let invitation = try await plugin.read(ParseInvitationParams(invitation: params.invitation, url: params.url))
            let wait = params.wait == true ? Duration.seconds(min(max(params.timeoutSeconds ?? 30, 1), 120)) : nil
            let (record, existing) = try await service.accept(
                invitation, label: params.label, returnRoute: params.returnRoute ?? false,
                didMethod: try PeerDIDMethod.parameter(params.didMethod), wait: wait, tenant: tenant)
            var view = ConnectionView(record)
            if existing { view.existing = true }
            return view
        }
        // Responses and problem reports of both handshakes (didexchange 1.0 and 1.1 too; the legacy
        // did:sov:...;spec/ prefix routes the same way): stored and applied in one transaction.
        // Senders (see InboundSender): a Response from the key its signed connection names (or
        // the invitation key), a problem report from the invitation key while the peer's key is
        // unknown; once known, only the peer's key.
        let responses = [ConnectionMessages.responseType] + DIDExchangeMessages.responseTypes
        let reports = [ConnectionMessages.problemReportType, ConnectionMessages.notificationProblemReportType]
            + DIDExchangeMessages.problemReportTypes
        for type in responses + reports {
            try router.registerInbound(type, from: responses.contains(type) ? .handshakeResponse : .handshakeReport) {
                message, tenant in
                try await service.apply(message, tenant: tenant)
            }
        }
        try router.register(
            "connections.createInvitation",
            summary: "Inviter role (RFC 0160): a connections/1.0 invitation with a fresh invitation key of the tenant; answers "
                + "{connectionId, invitation, invitationUrl (?c_i=), state: 1, multiUse, alias}. A Request to it is answered with a "
                + "Response signed by the invitation key (state 3, responded); the invitee's first message makes it 4 (accepted). "
                + "Single-use: that record becomes the connection and a later Request is refused; multiUse: a new connection per Request. "
                + "maxUses, expiresAt: Requests past them are refused (400), nothing stored; connections.get of the invitation shows "
                + "maxUses, uses, expiresAt and refusedRequests by reason."
        ) { (params: CreateInvitationParams, tenant: TenantContext) in
            let (checked, limits) = try params.validated()
            return try await service.createInvitation(
                label: checked.label, multiUse: checked.multiUse ?? false, alias: checked.alias, limits: limits, tenant: tenant)
        }
        // A Request (connections/1.0, didexchange 1.0/1.1) reaches only an open invitation of ours,
        // authcrypted by the key its DID document names.
        for type in [ConnectionMessages.requestType] + DIDExchangeMessages.requestTypes {
            try router.registerInbound(type, from: .invitationRequest) { message, tenant in
                try await service.receiveRequest(message, tenant: tenant)
            }
        }
        // didexchange `complete` from the requester: stored by the pipeline; being the invitee's
        // first message after our Response, it accepts the connection (`register(hooks:)`).
        for type in DIDExchangeMessages.completeTypes {
            try router.registerInbound(type) { _, _ in }
        }
        try router.register(
            "connections.ping",
            summary: "Sends a trust ping (RFC 0048) asking for a response over an established connection and waits for the peer's "
                + "ping_response: {connectionId, uid, @id, responseUid, roundTripMs}. The ping and the response are in the "
                + "connection's messages. timeout after timeoutSeconds (1...60, default 10)."
        ) { (params: PingParams, tenant: TenantContext) in
            let (id, timeout) = try params.validated()
            return try await service.ping(id, timeout: timeout, tenant: tenant)
        }
        // Pings and their answers are kept in the mailbox; a ping of the peer that asks for a
        // response is answered (only the peer's: senders `.peer`), a response wakes connections.ping.
        try router.registerInbound(ConnectionMessages.trustPingType) { message, tenant in
            try await service.answerPing(message, tenant: tenant)
        }
        try router.registerInbound(ConnectionMessages.trustPingResponseType) { message, tenant in
            try await service.pingResponded(message, tenant: tenant)
        }
    }
}

/// `connections.serialize`'s answer and `deserialize`'s input.
struct SerializedConnection: Codable, Sendable {
    static let currentVersion = 1
    var version: Int
    var connection: JSONValue
}

struct DeserializeParams: Decodable, Sendable, DocumentedParams {
    var serialized: JSONValue
    static let documentation = [ParamDoc("serialized", "object", "what connections.serialize answered")]
}

struct ConnectionPage: Encodable, Sendable {
    var connections: [ConnectionView]
    var next: String?
}

struct PwDidResult: Encodable, Sendable { var pwDid: String }

struct ExistingResult: Encodable, Sendable {
    var connectionId: String?
    var match: String?
    var connection: ConnectionView?
}

struct InvitationParams: Decodable, Sendable, DocumentedParams {
    var invitation: JSONValue?
    var url: String?
    static let documentation = ParseInvitationParams.documentation
}

struct ConnectionIdParams: Decodable, Sendable, DocumentedParams {
    var connectionId: String
    static let documentation = [ParamDoc("connectionId", "string", "the connection id")]

    func id() throws -> UUID {
        guard let id = UUID(text: connectionId) else {
            throw AerieError.invalidParams("connectionId must be a connection id (UUID)", field: "connectionId")
        }
        return id
    }
}

struct ConnectParams: Decodable, Sendable, DocumentedParams {
    var connectionId: String
    var label: String?
    var returnRoute: Bool?
    var didMethod: String?
    static let documentation = [
        ParamDoc("connectionId", "string", "the connection id"),
        ParamDoc("label", "string", required: false, "the label the inviter sees (default: the server's)"),
        .returnRoute, .didMethod,
    ]
    func id() throws -> UUID { try ConnectionIdParams(connectionId: connectionId).id() }
}

struct UpdateWithMessageParams: Decodable, Sendable, DocumentedParams {
    var connectionId: String
    var message: JSONValue
    static let documentation = [
        ParamDoc("connectionId", "string", "the connection id"),
        ParamDoc("message", "object|string", "the decrypted message, or a mailbox entry with decryptedPayload"),
    ]

    func payload() throws -> JSONValue {
        var value = message
        if case .string(let text) = value { value = try parse(text) }
        if let inner = value["decryptedPayload"] {
            value = inner
            if case .string(let text) = value { value = try parse(text) }
        }
        guard case .object = value else { throw AerieError.invalidParams("message must be a JSON object", field: "message") }
        return value
    }

    private func parse(_ text: String) throws -> JSONValue {
        guard text.utf8.count <= 256 * 1024, let value = try? JSONValue(parsing: text) else {
            throw AerieError.invalidParams("message is not JSON (at most 256 KiB)", field: "message")
        }
        return value
    }
}

struct ListParams: Decodable, Sendable, DocumentedParams {
    var after: String?
    var limit: Int?
    var state: JSONValue?
    static let documentation = [
        ParamDoc("after", "string", required: false, "cursor: the last connectionId of the previous page"),
        ParamDoc("limit", "integer", required: false, "1...500 (100)"),
        ParamDoc("state", "integer|string", required: false, "only connections in this state (number or name)"),
    ]

    func stateFilter() throws -> ConnectionRecord.State? {
        switch state {
        case nil, .null?: return nil
        case .string(let name)?:
            if let s = ConnectionRecord.State(rawValue: name) { return s }
        case let value?:
            if let n = value.intValue, let s = ConnectionRecord.State.allCases.first(where: { Int64($0.number) == n }) { return s }
        }
        throw AerieError.invalidParams("state must be a state number or name", field: "state")
    }
}

struct AcceptParams: Decodable, Sendable, DocumentedParams {
    var invitation: JSONValue?
    var url: String?
    var wait: Bool?
    var timeoutSeconds: Int?
    var label: String?
    var returnRoute: Bool?
    var didMethod: String?
    static let documentation = ParseInvitationParams.documentation + [
        .returnRoute, .didMethod,
        ParamDoc("wait", "boolean", required: false, "wait until the connection is accepted or failed"),
        ParamDoc("timeoutSeconds", "integer", required: false, "how long to wait, 1...120 (30); then timeout"),
        ParamDoc("label", "string", required: false, "the label the inviter sees"),
    ]
}

extension ParamDoc {
    /// `returnRoute` of `connections.connect` and `connections.accept`. Off by default: a crash
    /// between the HTTP response and the stored answer loses the answer, which the inviter does
    /// not send again (docs/ARCHITECTURE.md, delivery).
    static let returnRoute = ParamDoc(
        "returnRoute", "boolean", required: false,
        "ask the inviter to answer on the same HTTP response, for an endpoint it cannot reach (default false: a crash before that answer is stored loses it)"
    )
}
