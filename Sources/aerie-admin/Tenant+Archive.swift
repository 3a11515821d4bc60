import AerieClient
import AerieCore
import ArgumentParser
import Foundation

extension Tenant {
    /// Where the archive's sealing secret comes from: a passphrase file or a key file.
    struct ArchiveKeyOptions: ParsableArguments {
        @Option(help: "A file holding the archive's passphrase (8-1024 bytes; its first line is used).")
        var passphraseFile: String?
        @Option(help: "Export: a file holding the recipient's X25519 public key (base64). Import: its secret key (base64).")
        var keyFile: String?

        func read(passphraseParam: String, keyParam: String) throws -> [String: JSONValue] {
            switch (passphraseFile, keyFile) {
            case (let path?, nil): return [passphraseParam: .string(try Self.firstLine(path))]
            case (nil, let path?): return [keyParam: .string(try Self.firstLine(path))]
            default: throw AdminFailure(exitCode: 2, message: "give exactly one of --passphrase-file and --key-file")
            }
        }

        static func firstLine(_ path: String) throws -> String {
            guard let data = FileManager.default.contents(atPath: path),
                let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init), !line.isEmpty
            else { throw AdminFailure(exitCode: 2, message: "cannot read \(path)") }
            return line
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a sealed archive of a whole tenant (consistent as of one snapshot; the tenant keeps working).")
        @Argument(help: "The tenant id.") var id: String
        @Option(help: "The archive file to write (created, mode 0600; must not exist).") var out: String
        @OptionGroup var key: ArchiveKeyOptions
        @OptionGroup var options: ServerOptions

        func run() async throws {
            try await reporting {
                guard let tenant = TenantID(id) else { throw AdminFailure(exitCode: 2, message: "the tenant id must be a UUID") }
                let sealing = try key.read(passphraseParam: "passphrase", keyParam: "recipientPublicKey")
                guard FileManager.default.createFile(atPath: out, contents: nil, attributes: [.posixPermissions: 0o600]),
                    !(try FileManager.default.attributesOfItem(atPath: out)[.size] as? Int ?? 0 > 0),
                    let file = FileHandle(forWritingAtPath: out)
                else { throw AdminFailure(exitCode: 2, message: "cannot create \(out)") }
                let client = try await options.connect()
                var bytes = 0
                do {
                    try await client.exportTenant(tenant, sealing: sealing) { piece in
                        try file.write(contentsOf: piece)
                        bytes += piece.count
                    }
                    try file.synchronize()
                    try file.close()
                } catch {
                    try? file.close()
                    try? FileManager.default.removeItem(atPath: out)
                    await client.close()
                    throw AdminFailure.from(error)
                }
                await client.close()
                print("exported tenant \(tenant) to \(out) (\(bytes) bytes)")
            }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Recreate a tenant from an archive, all of it or nothing; its DIDs (and, but with --new-id, its token) stay the same.")
        @Argument(help: "The archive file.") var file: String
        @Option(help: "The backend that will own the tenant.") var backend: String?
        @Flag(help: "If the tenant's id is taken here, import it under a fresh id with a new token (printed once).")
        var newId = false
        @OptionGroup var key: ArchiveKeyOptions
        @OptionGroup var options: ServerOptions

        func run() async throws {
            try await reporting {
                var opening = try key.read(passphraseParam: "passphrase", keyParam: "recipientSecretKey")
                if let backend { opening["backendId"] = .string(backend) }
                if newId { opening["newId"] = true }
                guard let handle = FileHandle(forReadingAtPath: file) else {
                    throw AdminFailure(exitCode: 2, message: "cannot read \(file)")
                }
                defer { try? handle.close() }
                let client = try await options.connect()
                let imported: JSONValue
                do {
                    imported = try await client.importTenant(opening: opening) {
                        let data = try handle.read(upToCount: 256 << 10) ?? Data()
                        return data.isEmpty ? nil : Array(data)
                    }
                } catch {
                    await client.close()
                    throw AdminFailure.from(error)
                }
                await client.close()
                if options.json {
                    print(imported.prettyJSON)
                } else if let token = imported["token"]?.stringValue {
                    print("imported tenant \(imported["tenantId"]?.text ?? "-") under a new id; its new token (shown once): \(token)")
                } else {
                    print("imported tenant \(imported["tenantId"]?.text ?? "-")")
                }
            }
        }
    }

    struct Move: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move a tenant to another Aerie server, then shred it here.",
            discussion: """
                The tenant is frozen here (status moving: no calls, its inbound answered 503 so peers
                retry), its archive streamed into the other server's import (sealed to a one-time
                passphrase), and once that committed it is shredded here; its keys are answered 503
                for AERIE_MOVED_TENANT_GRACE_SECONDS. After any failure run the same command again
                (it resumes), or 'tenant resume' here to roll the move back. Where the other server
                has another public endpoint, --rotate-token-file (the tenant's token) then rotates
                every established connection's DID there (DID Rotate), so peers learn the endpoint.
                """)
        @Argument(help: "The tenant id.") var id: String
        @Option(help: "The destination's JSON-RPC address HOST:PORT.") var to: String
        @Option(help: "A file holding the destination's admin token.") var toTokenFile: String
        @Option(help: "After the move, rotate every connection's DID at the destination, as the tenant whose token this file holds.")
        var rotateTokenFile: String?
        @OptionGroup var options: ServerOptions

        func run() async throws {
            try await reporting {
                guard let tenant = TenantID(id) else { throw AdminFailure(exitCode: 2, message: "the tenant id must be a UUID") }
                var destinationOptions = options
                destinationOptions.server = to
                let destinationToken = try ArchiveKeyOptions.firstLine(toTokenFile)
                // Read before anything moves: an unreadable file stops the command with the tenant untouched.
                let tenantToken = try rotateTokenFile.map(ArchiveKeyOptions.firstLine)
                let source = try await options.connect()
                let destination = try await destinationOptions.connect(token: destinationToken)
                let retired: JSONValue
                do {
                    retired = try await source.moveTenant(tenant, to: destination)
                } catch {
                    await source.close()
                    await destination.close()
                    throw AdminFailure.from(error)
                }
                await source.close()
                await destination.close()
                print(options.json ? retired.prettyJSON : "moved tenant \(tenant) to \(to); shredded here")
                guard let tenantToken else { return }
                let tenantSession = try await destinationOptions.connect(token: tenantToken)
                do {
                    let rotated = try await tenantSession.rotateEveryConnection()
                    await tenantSession.close()
                    print("announced the new endpoint on \(rotated.count) connections (DID Rotate)")
                } catch {
                    await tenantSession.close()
                    throw AdminFailure.from(error)
                }
            }
        }
    }
}
