import AerieCore
import Foundation

extension ConnectionsPlugin {
    /// This plugin's reading, duplicate detection and handshakes, for the plugins built on it.
    public var handshakes: any ConnectionHandshakes { Handshakes(plugin: self) }

    struct Handshakes: ConnectionHandshakes {
        let plugin: ConnectionsPlugin

        var sender: any ConnectionSender { plugin.service.sender }

        func readInvitation(_ invitation: JSONValue?, url: String?) async throws -> Invitation {
            try await plugin.read(ParseInvitationParams(invitation: invitation, url: url))
        }

        func existingConnection(for invitation: Invitation, in tx: any TenantTransaction) throws -> ExistingConnection? {
            try ConnectionService.findExisting(InvitationMatchKeys(invitation), in: tx)
        }

        func newRecord(for invitation: Invitation) -> ConnectionRecord {
            ConnectionService.record(for: invitation)
        }

        func checkConnectable(_ invitation: Invitation) throws {
            _ = try HandshakeProtocol.choose(kind: invitation.kind, offered: invitation.handshakeProtocols)
            _ = try invitation.usableService()
        }

        func create(_ invitation: Invitation, tenant: TenantContext) async throws -> ConnectionRecord {
            try await plugin.service.create(invitation, tenant: tenant).record
        }

        func createAndConnect(
            _ record: ConnectionRecord, label: String?, didMethod: PeerDIDMethod?, tenant: TenantContext,
            alsoStore: @escaping @Sendable (ConnectionRecord, any TenantTransaction) throws -> Void
        ) async throws -> (record: ConnectionRecord, existing: Bool) {
            try await plugin.service.createAndConnect(
                record, label: label, didMethod: didMethod, tenant: tenant, alsoStore: alsoStore)
        }

        func connect(_ id: UUID, label: String?, didMethod: PeerDIDMethod?, tenant: TenantContext) async throws
            -> ConnectionRecord
        {
            try await plugin.service.connect(id, label: label, didMethod: didMethod, tenant: tenant)
        }

        func waitForHandshake(_ connection: ConnectionRecord, timeout: Duration, tenant: TenantContext) async throws
            -> ConnectionRecord
        {
            let service = plugin.service
            let watch = service.waits.watch(connection.id, tenant: tenant.tenantID)
            defer { service.waits.stop(watch) }
            // Read once the watch is on, so a state committed before it is not missed.
            let current = try await service.load(connection.id, tenant: tenant)
            return try await service.waitWhilePending(current, watch: watch, timeout: timeout, tenant: tenant)
        }

        func storeInvitation(
            kind: Invitation.Kind, multiUse: Bool, alias: String?, limits: InvitationUseLimits, tenant: TenantContext,
            build: @Sendable (_ invitationKey: String, _ endpoint: String, _ defaultLabel: String) throws -> JSONValue
        ) async throws -> ConnectionRecord {
            try await plugin.service.storeInvitation(
                kind: kind, multiUse: multiUse, alias: alias, limits: limits, tenant: tenant, build: build)
        }

        var defaultLabel: String { plugin.service.defaultLabel }

        func invitationDID(method: PeerDIDMethod, tenant: TenantContext) async throws -> ConnectionRecord {
            try await plugin.service.invitationDID(method: method, tenant: tenant)
        }

        func load(_ id: UUID, tenant: TenantContext) async throws -> ConnectionRecord {
            try await plugin.service.load(id, tenant: tenant)
        }

        func move(_ move: ConnectionMove, _ connection: ConnectionRecord, reviewed mailboxUid: UUID?, in tx: any TenantTransaction)
            throws -> ConnectionRecord
        {
            switch move {
            case .reuseAccepted:
                try ConnectionService.commit(.reuseAccepted, to: connection, reviewed: mailboxUid, in: tx)
            case .connectionless:
                try ConnectionService.commit(.connectionless, to: connection, inserting: true, reviewed: mailboxUid, in: tx)
            case .delete:
                try ConnectionService.commit(.delete, to: connection, reviewed: mailboxUid, in: tx)
            }
        }

        func committed(_ connection: ConnectionRecord, tenant: TenantContext) {
            plugin.service.committed(connection, tenant: tenant)
        }

        func waitFor<T: Sendable>(
            _ connectionId: UUID, timeout: Duration, tenant: TenantContext, check: @Sendable () async throws -> T?
        ) async throws -> T? {
            try await plugin.service.waitFor(connectionId, timeout: timeout, tenant: tenant, check: check)
        }
    }
}
