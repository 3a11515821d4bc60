import AerieCore
import ConnectionsPlugin
import Logging
import Synchronization
import Testing

/// Runs `body` and returns the `AerieError` it throws; records an issue when it throws nothing
/// or something else.
@discardableResult
func expectAerieError(
    _ code: AerieError.Code, field: String? = nil, containing text: String? = nil,
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Any
) async -> AerieError? {
    do {
        let value = try await body()
        Issue.record("expected \(code), got \(value)", sourceLocation: sourceLocation)
        return nil
    } catch let error as AerieError {
        #expect(error.code == code, "\(String(reflecting: error))", sourceLocation: sourceLocation)
        if let field { #expect(error.field == field, "\(String(reflecting: error))", sourceLocation: sourceLocation) }
        if let text {
            #expect(error.message.contains(text), "\(String(reflecting: error))", sourceLocation: sourceLocation)
        }
        return error
    } catch {
        Issue.record("expected AerieError \(code), got \(String(reflecting: error))", sourceLocation: sourceLocation)
        return nil
    }
}

/// A fetcher that answers from a closure and records what it was asked.
final class StubFetcher: URLFetcher {
    private let answer: @Sendable (URLFetchRequest) throws -> FetchedURL
    private let recorded = Mutex<[URLFetchRequest]>([])

    init(_ answer: @escaping @Sendable (URLFetchRequest) throws -> FetchedURL) {
        self.answer = answer
    }

    /// A fetcher that must not be called.
    static var unused: StubFetcher {
        StubFetcher { request in
            Issue.record("unexpected fetch of \(request.url)")
            throw URLFetchError(.unreachable, "unexpected fetch")
        }
    }

    var requests: [URLFetchRequest] { recorded.withLock { $0 } }

    func fetch(_ request: URLFetchRequest) async throws -> FetchedURL {
        recorded.withLock { $0.append(request) }
        return try answer(request)
    }

    /// Every endpoint passes: these tests judge invitations, not the address policy.
    func checkDestination(_ url: String) async throws {}
}

/// A lookup that knows one connection by its invitation's first key.
struct KeyLookup: ConnectionLookup {
    var key: String
    var connectionId: String

    func existingConnectionId(matching keys: InvitationMatchKeys, tenant: TenantContext) async throws -> String? {
        InvitationMatchKeys(id: nil, publicDid: nil, firstRecipientKey: key).match(keys) != nil ? connectionId : nil
    }
}

/// The plugin methods under test never open a transaction.
struct UnusedDatabase: TenantDatabase {
    let tenantID: TenantID
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any TenantTransaction) throws -> T) async throws -> T {
        throw AerieError.internalError(details: "no database in these tests")
    }
    func sealing(with keyring: any TenantKeyring) -> any TenantDatabase { self }
}

struct NullSession: SessionHandle {
    let id: UInt64 = 0
    func notify(method: String, params: JSONValue) -> Bool { false }
}

extension CallContext {
    static func tenant() -> CallContext {
        let id = TenantID.random()
        let tenant = TenantContext(tenantID: id, database: UnusedDatabase(tenantID: id), logger: Logger(label: "test"))
        return CallContext(principal: .tenant(tenant), logger: Logger(label: "test"), session: NullSession())
    }

    static let anonymous = CallContext(principal: .anonymous, logger: Logger(label: "test"), session: NullSession())
}
