import AerieCore

/// `connections.*`: reading invitations now; creating, connecting and listing connections come
/// with the connection store.
public struct ConnectionsPlugin: AeriePlugin {
    public static let name = "connections"

    public let reader: InvitationReader
    public let lookup: any ConnectionLookup

    /// `fetcher` resolves short URLs (AerieTransport's `URLResolver` in the server);
    /// `lookup` finds an existing connection for an invitation.
    public init(fetcher: any URLFetcher, lookup: any ConnectionLookup = NoConnectionLookup()) {
        self.reader = InvitationReader(fetcher: fetcher)
        self.lookup = lookup
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
