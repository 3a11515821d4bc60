import AerieCore
import Foundation

/// Tenant archives through an admin session (`admin.tenants.export`, `exportChunk`, `import`,
/// `retire`): what `aerie-admin tenant export / import / move` run.
extension AerieClient {
    /// The most archive bytes one `admin.tenants.import` call carries.
    public static let archivePieceByteCount = 512 << 10

    /// Exports a tenant, handing each piece of the archive file to `write` in order. `sealing`:
    /// `["passphrase": …]` or `["recipientPublicKey": …]`; `move`: freeze the tenant as `moving`
    /// first. Answers `admin.tenants.export`'s result.
    @discardableResult
    public func exportTenant(
        _ tenant: TenantID, sealing: [String: JSONValue], move: Bool = false, write: ([UInt8]) async throws -> Void
    ) async throws -> JSONValue {
        var params = sealing
        params["tenantId"] = .string(tenant.rawValue)
        if move { params["move"] = true }
        let started = try await call("admin.tenants.export", params: .object(params))
        guard let exportID = started["exportId"]?.stringValue else {
            throw Self.unexpected("admin.tenants.export answered no exportId")
        }
        while true {
            let chunk = try await call("admin.tenants.exportChunk", params: ["exportId": .string(exportID)])
            if chunk["done"]?.boolValue == true { return started }
            guard let text = chunk["data"]?.stringValue, let data = Data(base64Encoded: text) else {
                throw Self.unexpected("admin.tenants.exportChunk answered no data")
            }
            try await write(Array(data))
        }
    }

    /// Imports an archive whose bytes `read` hands out in order (nil at the end). `opening`:
    /// `["passphrase": …]` or `["recipientSecretKey": …]`, plus `backendId` if wanted. Answers
    /// what was committed (`imported` of the final call).
    public func importTenant(opening: [String: JSONValue], read: () async throws -> [UInt8]?) async throws -> JSONValue {
        var importID: String?
        var pending: [UInt8] = []
        var ended = false
        while true {
            while !ended, pending.count < Self.archivePieceByteCount {
                if let more = try await read() { pending += more } else { ended = true }
            }
            let count = min(pending.count, Self.archivePieceByteCount)
            let final = ended && count == pending.count
            var params: [String: JSONValue] = ["data": .string(Data(pending[0..<count]).base64EncodedString())]
            if final { params["final"] = true }
            if let importID { params["importId"] = .string(importID) } else { params.merge(opening) { $1 } }
            pending.removeFirst(count)
            let answer = try await call("admin.tenants.import", params: .object(params))
            importID = answer["importId"]?.stringValue
            if final { return answer["imported"] ?? .null }
        }
    }

    /// Moves a tenant from the server of this session to the server of `destination` (both admin
    /// sessions): freezes it here (`moving`), streams its archive into `destination`'s import,
    /// and once that committed shreds it here. Run again after any failure: a tenant the
    /// destination already holds is only retired here; otherwise the export starts over (the
    /// destination kept nothing of a failed import). `admin.tenants.resume` here rolls a move back.
    public func moveTenant(_ tenant: TenantID, to destination: AerieClient) async throws -> JSONValue {
        if try await destination.holds(tenant) {
            return try await call("admin.tenants.retire", params: ["tenantId": .string(tenant.rawValue)])
        }
        var generator = SystemRandomNumberGenerator()
        let passphrase = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        let (pieces, continuation) = AsyncThrowingStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingOldest(4))
        @Sendable func export() async throws -> JSONValue {
            do {
                let started = try await exportTenant(tenant, sealing: ["passphrase": .string(passphrase)], move: true) { piece in
                    // A full buffer: wait for the import to take some (memory stays flat).
                    while case .dropped = continuation.yield(piece) { try await Task.sleep(for: .milliseconds(5)) }
                }
                continuation.finish()
                return started
            } catch {
                continuation.finish(throwing: error)
                throw error
            }
        }
        async let exported = export()
        var iterator = pieces.makeAsyncIterator()
        let imported = try await destination.importTenant(opening: ["passphrase": .string(passphrase)]) { try await iterator.next() }
        _ = try await exported
        guard imported["tenantId"]?.stringValue == tenant.rawValue else {
            throw Self.unexpected("the destination imported another tenant than \(tenant)")
        }
        return try await call("admin.tenants.retire", params: ["tenantId": .string(tenant.rawValue)])
    }

    /// After a move to a server with another public endpoint: announces the new endpoint on each of
    /// the tenant's established connections by DID Rotate (RFC 0794), through the tenant method
    /// `connections.rotateDid`, on this session (the tenant's own, or its backend's acting for
    /// `tenant`) at the destination. A server without DID Rotate answers `method_not_found`,
    /// which is thrown: nothing is announced then, and peers that still send to the old server
    /// are answered 503 until its grace period ends. Does not wait for the peers' acks. Answers
    /// the connections rotated.
    public func rotateEveryConnection(tenant: TenantID? = nil) async throws -> [String] {
        func call(_ method: String, _ params: JSONValue) async throws -> JSONValue {
            if let tenant { return try await self.call(method, params: params, tenant: tenant) }
            return try await self.call(method, params: params)
        }
        var rotated: [String] = []
        var after: String?
        repeat {
            var params: [String: JSONValue] = ["limit": 100, "state": 4]
            if let after { params["after"] = .string(after) }
            let page = try await call("connections.list", .object(params))
            guard case .array(let connections)? = page["connections"] else { break }
            for connection in connections {
                guard let id = connection["connectionId"]?.stringValue else { continue }
                // Not waiting for the ack: a peer may send it to the endpoint it knew (ACA-Py
                // 1.2.7 does), which is the old server, answering 503; the peer has the new DID
                // all the same.
                _ = try await call("connections.rotateDid", ["connectionId": .string(id), "wait": false])
                rotated.append(id)
            }
            after = page["next"]?.stringValue
        } while after != nil
        return rotated
    }

    private static func unexpected(_ message: String) -> AerieClientError {
        AerieClientError(code: -32603, message: message, data: nil)
    }

    private func holds(_ tenant: TenantID) async throws -> Bool {
        do {
            _ = try await call("admin.tenants.get", params: ["tenantId": .string(tenant.rawValue)])
            return true
        } catch let error as AerieClientError where error.stableCode == "not_found" {
            return false
        }
    }
}
