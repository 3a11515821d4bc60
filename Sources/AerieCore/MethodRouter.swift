import Foundation

/// Maps JSON-RPC method names and inbound DIDComm message types to handlers; nothing else
/// (hooks: `ConnectionHooks`; event presentation: `EventPresenterRegistry`).
///
/// Plugins register into it before the server starts; the server then holds it as an immutable
/// value. A name registered twice is a start-up error, never a silent override.
public struct MethodRouter: Sendable {
    /// Who may call a method.
    public enum Access: String, Sendable, Hashable {
        /// Callable before `session.authenticate`.
        case anonymous
        /// Needs a tenant session; the handler receives that tenant's context.
        case tenant
        /// Needs the admin token.
        case admin
        /// The admin token, or a backend's (the handler gets `.backend` and scopes to its tenants).
        case adminOrBackend
        /// A backend session only, acting for no tenant (the handler gets `.backend`).
        case backend
    }

    public typealias ErasedHandler = @Sendable (JSONValue?, CallContext) async throws -> MethodResult

    public struct Method: Sendable {
        public let name: String
        public let summary: String
        public let access: Access
        public let params: [ParamDoc]
        public let plugin: String
        public let handler: ErasedHandler
    }

    public typealias InboundHandler = @Sendable (InboundMessage, TenantContext) async throws -> Void

    public struct InboundRoute: Sendable {
        public let type: String
        public let plugin: String
        /// Who the type is taken from on a connection; anyone else is refused at the endpoint.
        public let senders: InboundSenders
        /// Registered by `registerStoredInbound`: no handler, the pipeline only stores the
        /// message (`opensWithRememberedRecipient`).
        public let storedOnly: Bool
        public let handler: InboundHandler
    }

    public private(set) var methods: [String: Method] = [:]
    public private(set) var inbound: [String: InboundRoute] = [:]
    /// The plugin currently registering; set by `install(_:)` so errors and docs name it.
    private var currentPlugin = "core"

    public init() {}

    /// Lets `plugin` register everything it serves.
    public mutating func install(_ plugin: some AeriePlugin) throws {
        let previous = currentPlugin
        currentPlugin = type(of: plugin).name
        defer { currentPlugin = previous }
        try plugin.register(with: &self)
    }

    /// Registers a method with typed params and result.
    public mutating func register<Params: Decodable & Sendable, Result: Encodable & Sendable>(
        _ name: String,
        summary: String,
        access: Access = .tenant,
        params: Params.Type = Params.self,
        handler: @escaping @Sendable (Params, CallContext) async throws -> Result
    ) throws {
        let docs = (Params.self as? any DocumentedParams.Type)?.documentation ?? []
        try registerErased(name, summary: summary, access: access, params: docs) { raw, context in
            let decoded = try Self.decodeParams(Params.self, from: raw)
            let result = try await handler(decoded, context)
            if let text = result as? JSONText { return .text(text) }
            return .value(try JSONValue(encoding: result))
        }
    }

    /// Registers a tenant method: the handler receives the caller's tenant context.
    public mutating func register<Params: Decodable & Sendable, Result: Encodable & Sendable>(
        _ name: String,
        summary: String,
        params: Params.Type = Params.self,
        tenantHandler: @escaping @Sendable (Params, TenantContext) async throws -> Result
    ) throws {
        try register(name, summary: summary, access: .tenant, params: params) { decoded, context in
            guard case .tenant(let tenant) = context.principal else {
                throw AerieError(.forbidden, "this method needs a tenant session")
            }
            return try await tenantHandler(decoded, tenant)
        }
    }

    public mutating func registerErased(
        _ name: String, summary: String, access: Access, params: [ParamDoc] = [],
        handler: @escaping ErasedHandler
    ) throws {
        guard !name.isEmpty, !name.hasPrefix("rpc.") || name == "rpc.discover" else {
            throw RouterError(message: "method name '\(name)' is reserved")
        }
        if let existing = methods[name] {
            throw RouterError(
                message: "method '\(name)' is registered twice (by '\(existing.plugin)' and '\(currentPlugin)')")
        }
        methods[name] = Method(
            name: name, summary: summary, access: access, params: params, plugin: currentPlugin,
            handler: handler)
    }

    /// Registers the handler for an inbound DIDComm message type. Types are stored under the
    /// `https://didcomm.org/` prefix, so the legacy `did:sov:...;spec/` spelling routes the same way.
    public mutating func registerInbound(
        _ type: String, from senders: InboundSenders = .peer, handler: @escaping InboundHandler
    ) throws {
        try addInbound(type, senders: senders, storedOnly: false, handler: handler)
    }

    /// Registers an inbound type that nothing handles: the pipeline stores a message of it from
    /// the connection's peer in the mailbox, and that is all. Only such a type may be taken with
    /// a recipient remembered from an earlier read (`InboundRoute.opensWithRememberedRecipient`).
    public mutating func registerStoredInbound(_ type: String) throws {
        try addInbound(type, senders: .peer, storedOnly: true) { _, _ in }
    }

    private mutating func addInbound(
        _ type: String, senders: InboundSenders, storedOnly: Bool, handler: @escaping InboundHandler
    ) throws {
        let key = InboundMessage.normalizedType(type)
        if let existing = inbound[key] {
            throw RouterError(
                message: "message type '\(key)' is registered twice (by '\(existing.plugin)' and '\(currentPlugin)')")
        }
        inbound[key] = InboundRoute(type: key, plugin: currentPlugin, senders: senders, storedOnly: storedOnly, handler: handler)
    }

    public func method(named name: String) -> Method? { methods[name] }

    public func inboundRoute(for type: String) -> InboundRoute? { inbound[InboundMessage.normalizedType(type)] }

    static func decodeParams<Params: Decodable>(_ type: Params.Type, from raw: JSONValue?) throws -> Params {
        // Hot path: methods without params skip the Codable round trip entirely.
        if Params.self == NoParams.self {
            switch raw {
            case nil, .null?: return NoParams() as! Params
            case .object(let fields)? where fields.isEmpty: return NoParams() as! Params
            default: break
            }
        }
        let value: JSONValue
        switch raw {
        case nil, .null?: value = .object([:])
        case .object?: value = raw!
        case .array?:
            throw AerieError.invalidParams("params must be an object (by-name)", field: "params")
        default:
            throw AerieError.invalidParams("params must be an object", field: "params")
        }
        if let field = value.pathOfNulCharacter() {
            throw AerieError.invalidParams("\(field) must not contain the character U+0000", field: field)
        }
        do {
            return try value.decode(as: Params.self)
        } catch let error as DecodingError {
            let field = error.fieldPath
            throw AerieError.invalidParams("\(field) \(error.reason)", field: field)
        } catch let error as AerieError {
            throw error
        } catch {
            throw AerieError.invalidParams("params are invalid", field: "params")
        }
    }
}

/// A start-up configuration error in plugin registration.
public struct RouterError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
}

/// Params that need none.
public struct NoParams: Codable, Sendable, Hashable {
    public init() {}
}

/// Documentation of one params field, for `rpc.discover`.
public struct ParamDoc: Sendable, Hashable {
    public var name: String
    public var type: String
    public var required: Bool
    public var summary: String

    public init(_ name: String, _ type: String, required: Bool = true, _ summary: String = "") {
        self.name = name
        self.type = type
        self.required = required
        self.summary = summary
    }
}

/// Params types that describe their fields for the OpenRPC document.
public protocol DocumentedParams {
    static var documentation: [ParamDoc] { get }
}

/// What a method answers: a value, or its JSON text already written (`JSONText`), which the RPC
/// layer sends as it is.
public enum MethodResult: Sendable {
    case value(JSONValue)
    case text(JSONText)

    /// The result as a value (the text parsed): for tests and other in-process callers.
    public var value: JSONValue {
        get throws {
            switch self {
            case .value(let value): value
            case .text(let text): try text.value
            }
        }
    }
}
