import AerieCore
import AerieCrypto

/// Test-only methods that drive a tenant's key wallet over RPC, so tests reach it exactly as a
/// protocol plugin does: through the server's per-call `TenantContext` and its keyring. (No
/// production method exposes the wallet; plugins use it internally.)
struct KeyProbePlugin: AeriePlugin {
    static let name = "keyprobe"

    struct CreateParams: Codable, Sendable { var seedHex: String? }
    struct SignParams: Codable, Sendable {
        var verkey: String
        var data: String
    }
    struct PackParams: Codable, Sendable {
        var message: String
        var to: [String]
        var from: String?
    }
    struct UnpackParams: Codable, Sendable { var envelope: String }
    struct Unpacked: Codable, Sendable {
        var message: String
        var sender: String?
        var recipient: String
    }

    func register(with router: inout MethodRouter) throws {
        try router.register("keyprobe.create", summary: "Creates a key; returns its verkey.") {
            (params: CreateParams, tenant: TenantContext) in
            try await tenant.keys.createKey(seed: try params.seedHex.map(Hex.decode))
        }
        try router.register("keyprobe.list", summary: "The tenant's verkeys.") { (_: NoParams, tenant: TenantContext) in
            try await tenant.keys.list().map(\.verkey)
        }
        try router.register("keyprobe.sign", summary: "Signs data; returns the base64 signature.") {
            (params: SignParams, tenant: TenantContext) in
            Base64.encode(try await tenant.keys.sign(Array(params.data.utf8), with: params.verkey))
        }
        try router.register("keyprobe.pack", summary: "Packs a message.") {
            (params: PackParams, tenant: TenantContext) in
            String(
                decoding: try await tenant.keys.pack(Array(params.message.utf8), to: params.to, from: params.from),
                as: UTF8.self)
        }
        try router.register("keyprobe.unpack", summary: "Unpacks an envelope.") {
            (params: UnpackParams, tenant: TenantContext) in
            let unpacked = try await tenant.keys.unpack(Array(params.envelope.utf8))
            return Unpacked(
                message: String(decoding: unpacked.plaintext, as: UTF8.self), sender: unpacked.senderVerkey,
                recipient: unpacked.recipientVerkey)
        }
    }
}
