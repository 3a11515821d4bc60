import AerieCore
import Foundation

/// `connections.delete`: removes a connection and everything of the tenant's that belongs to it,
/// in one transaction; optionally tells the peer first. Built on the connections plugin, whose
/// state machine takes the connection to `deleted`.
public struct DeletePlugin: AeriePlugin {
    public static let name = "delete"

    public let deletion: ConnectionDeletion

    public init(handshakes: any ConnectionHandshakes) {
        self.init(deletion: ConnectionDeletion(handshakes: handshakes))
    }

    public init(deletion: ConnectionDeletion) {
        self.deletion = deletion
    }

    public func register(with router: inout MethodRouter) throws {
        let deletion = self.deletion
        try router.register(
            "connections.delete",
            summary: "Deletes a connection with its pairwise key, mailbox messages and outbox entries; with notify, tells the peer first (best effort)."
        ) { (params: DeleteParams, tenant: TenantContext) in
            try await deletion.delete(try params.id(), notify: params.notify ?? false, tenant: tenant)
        }
    }
}

struct DeleteParams: Decodable, Sendable, DocumentedParams {
    var connectionId: String
    var notify: Bool?

    static let documentation = [
        ParamDoc("connectionId", "string", "the connection id"),
        ParamDoc(
            "notify", "boolean", required: false,
            "send the peer a problem report (connection_closed) before deleting; best effort, never blocks the delete"),
    ]

    func id() throws -> UUID {
        guard let id = UUID(text: connectionId) else {
            throw AerieError.invalidParams("connectionId must be a connection id (UUID)", field: "connectionId")
        }
        return id
    }
}
