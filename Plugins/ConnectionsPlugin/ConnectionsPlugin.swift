import AerieCore
import Foundation

/// `connections.*`: reading invitations, and the invitee side of RFC 0160 (create, connect,
/// Response handling, state queries).
public struct ConnectionsPlugin: AeriePlugin {
    public static let name = "connections"
    public static var storage: PluginStorage { InvitationUseStore.storage }

    public let reader: InvitationReader
    public let lookup: any ConnectionLookup
    public let service: ConnectionService

    /// `fetcher` resolves short URLs and judges peers' endpoints (AerieTransport's `URLResolver`
    /// in the server);
    /// `lookup` finds an existing connection for an invitation; `endpoint` is where peers reach
    /// us (`AERIE_PUBLIC_ENDPOINT`).
    /// `commits` (the server's `EventSubscriptions`) wakes waits on the connection states other
    /// processes commit; without it they poll. `pendingConnectionsMax`: `AERIE_PENDING_CONNECTIONS_MAX`.
    /// `sender` sends over established connections (trust pings; the server's
    /// `ConnectionSendService`), and is what the plugins built on this one send with.
    public init(
        fetcher: any URLFetcher, lookup: any ConnectionLookup = StoreConnectionLookup(),
        endpoint: @escaping @Sendable () -> String = { "http://127.0.0.1:7401" }, label: String = "Aerie",
        commits: (any EventSubscriptions)? = nil, pendingConnectionsMax: Int = 100, sender: any ConnectionSender
    ) {
        self.reader = InvitationReader(fetcher: fetcher)
        self.lookup = lookup
        var service = ConnectionService(endpoint: endpoint, defaultLabel: label, destinations: fetcher, sender: sender)
        service.commits = commits
        service.pendingConnectionsMax = pendingConnectionsMax
        self.service = service
    }

    public func register(with router: inout MethodRouter) throws {
        let plugin = self
        try router.register(
            "connections.parseInvitation",
            summary: "Reads an invitation (JSON, invitation URL or short URL) and tells what it is and whether a connection for it exists."
        ) { (params: ParseInvitationParams, tenant: TenantContext) in
            let invitation = try await plugin.read(params)
            return try await plugin.summary(of: invitation, tenant: tenant)
        }
        try router.register(
            "connections.resolveUrl",
            summary: "Decodes an invitation URL (?c_i=, ?oob=, ?d_m=) or fetches a short URL; answers the invitation JSON and its summary."
        ) { (params: ResolveURLParams, tenant: TenantContext) in
            let invitation = try await plugin.reader.read(url: params.url)
            return ResolvedInvitation(
                invitation: invitation.json, summary: try await plugin.summary(of: invitation, tenant: tenant))
        }
        try registerConnectionMethods(with: &router)
        try registerRotation(with: &router)
        let service = self.service
        service.commits?.observe(kind: "connection") { [waits = service.waits] tenant, event in
            // Only a state that can end a wait: hearing a connection become `requested` (our own
            // connect's commit, usually heard before the wait starts) must not cost a read.
            guard let id = event["connectionId"]?.stringValue.flatMap({ UUID(text: $0) }),
                let state = event["state"]?.stringValue.flatMap(ConnectionRecord.State.init(rawValue:)),
                state != .initialized, state != .requested, state != .responded
            else { return }
            waits.heard(id, state: state.rawValue, tenant: tenant)
        }
    }

    public func register(hooks: inout ConnectionHooks) {
        let service = self.service
        hooks.onConnectionFailure { connectionId, reason, tenant in
            // Only a connection still being set up fails (`conflict` otherwise: nothing to do).
            _ = try? await service.fail(connectionId, event: .deliveryFailed(reason: reason), tenant: tenant)
        }
        // didexchange `complete`, or any first message of the invitee after our Response, accepts
        // an inviter-side connection.
        hooks.onPeerConfirmation { connection, tenant in
            try await service.confirmPeer(connection, tenant: tenant)
        }
    }

    public func register(presenters: inout EventPresenterRegistry) throws {
        try presenters.presentEvents(ofKind: "connection", with: Self.stateChanged)
        try presenters.presentEvents(ofKind: "rotation", with: Self.rotation)
    }

    func read(_ params: ParseInvitationParams) async throws -> Invitation {
        switch (params.invitation, params.url) {
        case (let invitation?, nil): return try await reader.read(invitation)
        case (nil, let url?): return try await reader.read(url: url)
        case (nil, nil): throw AerieError.invalidParams("invitation or url is required", field: "invitation")
        case (.some, .some): throw AerieError.invalidParams("give invitation or url, not both", field: "url")
        }
    }

    func summary(of invitation: Invitation, tenant: TenantContext) async throws -> InvitationSummary {
        let existing = try await lookup.existingConnectionId(matching: InvitationMatchKeys(invitation), tenant: tenant)
        return InvitationSummary(invitation, existingConnectionId: existing)
    }
}

struct ParseInvitationParams: Decodable, Sendable, DocumentedParams {
    var invitation: JSONValue?
    var url: String?

    static let documentation = [
        ParamDoc(
            "invitation", "object|string", required: false,
            "the invitation: JSON object, JSON text, invitation URL or base64 (one of invitation, url)"),
        ParamDoc("url", "string", required: false, "an invitation URL (?c_i=, ?oob=, ?d_m=) or a short URL"),
    ]
}

struct ResolveURLParams: Decodable, Sendable, DocumentedParams {
    var url: String

    static let documentation = [
        ParamDoc("url", "string", "an invitation URL (?c_i=, ?oob=, ?d_m=) or a short URL (fetched, SSRF-safe)")
    ]
}

/// What `connections.resolveUrl` answers.
public struct ResolvedInvitation: Encodable, Sendable, Hashable {
    /// The invitation JSON object, decoded.
    public var invitation: JSONValue
    public var summary: InvitationSummary
}

extension ConnectionsPlugin {
    /// `connection` events (`{connectionId, state, pairwiseDID}`, state by name) are pushed as
    /// `connections.stateChanged {connectionId, state, stateName}`, `state` the seed's number.
    static func stateChanged(_ data: JSONValue) -> EventPresentation? {
        guard let id = data["connectionId"]?.stringValue, let name = data["state"]?.stringValue,
            let state = ConnectionRecord.State(rawValue: name)
        else { return nil }
        return EventPresentation(
            pushMethod: "connections.stateChanged",
            fields: ["connectionId": .string(id), "state": .int(Int64(state.number)), "stateName": .string(name)])
    }
}
