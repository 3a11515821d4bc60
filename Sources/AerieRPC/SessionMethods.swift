import AerieCore

/// `session.authenticate`, registered into the router like any plugin method.
public struct SessionMethods: AeriePlugin {
    public static let name = "session"
    let authenticator: any SessionAuthenticator

    public init(authenticator: any SessionAuthenticator) {
        self.authenticator = authenticator
    }

    struct AuthenticateParams: Codable, Sendable, DocumentedParams {
        var token: String
        static let documentation = [ParamDoc("token", "string", "a tenant token, a backend token or the admin token")]
    }

    struct AuthenticateResult: Codable, Sendable {
        var role: String
        var tenantId: TenantID?
        var backendId: BackendID? = nil
    }

    public func register(with router: inout MethodRouter) throws {
        let authenticator = self.authenticator
        try router.register(
            "session.authenticate", summary: "Authenticates this session with a tenant or admin token.",
            access: .anonymous
        ) { (params: AuthenticateParams, context: CallContext) in
            guard let session = context.session as? RPCSession else {
                throw AerieError.internalError(details: "session.authenticate outside an RPC session")
            }
            guard (16...512).contains(params.token.utf8.count) else {
                throw AerieError(.unauthenticated, "invalid token")
            }
            let credential = try await authenticator.authenticate(token: params.token)
            try session.authenticate(as: credential)
            switch credential.kind {
            case .admin: return AuthenticateResult(role: "admin", tenantId: nil)
            case .tenant(let id): return AuthenticateResult(role: "tenant", tenantId: id)
            case .backend(let id): return AuthenticateResult(role: "backend", tenantId: nil, backendId: id)
            }
        }
    }
}
