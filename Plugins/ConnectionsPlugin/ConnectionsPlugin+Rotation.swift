import AerieCore
import Foundation

extension ConnectionsPlugin {
    /// DID Rotate 1.0 (RFC 0794): `connections.rotateDid`, the peer's `rotate`, `ack`,
    /// `problem-report` and `hangup` (each only from the connection's peer). Its `rotation` events,
    /// pushed as `connections.rotation`, are presented in `register(presenters:)`.
    func registerRotation(with router: inout MethodRouter) throws {
        let service = self.service
        try router.register(
            "connections.rotateDid",
            summary: "Rotates our DID on an established connection (DID Rotate 1.0, RFC 0794): a new key and DID (didMethod, "
                + "did:peer:4 by default) with the server's current endpoint, announced to the peer by a rotate message. The old key keeps receiving until the "
                + "peer's ack, which makes the new DID the connection's and retires the old key: {connectionId, state: completed, "
                + "did, previousDid, uid, @id}. A problem report from the peer leaves the old DID (conflict, with problemCode); "
                + "no answer within timeoutSeconds (1...60, default 20) answers timeout and the rotation stays pending until the "
                + "ack; wait: false answers state pending at once. A rotation already pending answers conflict."
        ) { (params: RotateDIDParams, tenant: TenantContext) in
            let checked = try params.validated()
            return try await service.rotateDID(
                checked.id, method: checked.method, wait: params.wait ?? true, timeout: checked.timeout, tenant: tenant)
        }
        try router.registerInbound(DIDRotateMessages.rotateType) { message, tenant in
            try await service.receiveRotate(message, tenant: tenant)
        }
        try router.registerInbound(DIDRotateMessages.ackType) { message, tenant in
            try await service.rotationAcknowledged(message, tenant: tenant)
        }
        try router.registerInbound(DIDRotateMessages.problemReportType) { message, tenant in
            try await service.rotationRefused(message, tenant: tenant)
        }
        try router.registerInbound(DIDRotateMessages.hangupType) { message, tenant in
            try await service.receiveHangup(message, tenant: tenant)
        }
    }

    /// `rotation` events (`{connectionId, role, state, pairwiseDID}`) are pushed as
    /// `connections.rotation {connectionId, role, state, pairwiseDID}`: role `rotating` (ours:
    /// `sent`, `completed`, `refused`) or `observing` (the peer's: `completed`, `refused`).
    static func rotation(_ data: JSONValue) -> EventPresentation? {
        guard let id = data["connectionId"]?.stringValue, let role = data["role"]?.stringValue,
            let state = data["state"]?.stringValue
        else { return nil }
        return EventPresentation(
            pushMethod: "connections.rotation",
            fields: [
                "connectionId": .string(id), "role": .string(role), "state": .string(state),
                "pairwiseDID": data["pairwiseDID"] ?? .null,
            ])
    }
}

struct RotateDIDParams: Decodable, Sendable, DocumentedParams {
    static let defaultTimeout = 20
    static let maxTimeout = 60

    var connectionId: String
    var didMethod: String?
    var wait: Bool?
    var timeoutSeconds: Int?

    static let documentation = [
        ParamDoc("connectionId", "string", "an established connection (state 4 accepted or 5 reused)"),
        ParamDoc("didMethod", "string", required: false, "the new DID's method: \"did:peer:4\" (the default) or \"did:peer:2\""),
        ParamDoc("wait", "boolean", required: false, "wait for the peer's answer (true, the default) or answer state pending at once"),
        ParamDoc("timeoutSeconds", "integer", required: false, "how long to wait for the peer's answer, 1...60 (20); then timeout"),
    ]

    func validated() throws -> (id: UUID, method: PeerDIDMethod, timeout: Duration) {
        let id = try ConnectionIdParams(connectionId: connectionId).id()
        let method = try PeerDIDMethod.parameter(didMethod) ?? .peer4
        let seconds = timeoutSeconds ?? Self.defaultTimeout
        guard (1...Self.maxTimeout).contains(seconds) else {
            throw AerieError.invalidParams("timeoutSeconds must be between 1 and \(Self.maxTimeout)", field: "timeoutSeconds")
        }
        return (id, method, .seconds(seconds))
    }
}
