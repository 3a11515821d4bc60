import AerieCore

/// The sealed container of a tenant archive (docs/OPERATIONS.md, "Tenant archives"): a header in
/// clear that says how to get the file key, then the body as a `SecretStream` of chunks, each
/// authenticated with the whole header as associated data. What the chunks hold (the tenant's
/// rows) is the store's business; this type only seals and opens them.
///
/// ```
/// "AERIEARC"  version u16  archive id (16)  mode u8
///   mode 1 (passphrase): salt (16)  Argon2id opslimit u64  memlimit u64
///   mode 2 (recipient):  the file key sealed to the recipient's X25519 key (80)
/// key check (16)  stream header (24)
/// then chunks: length u32 (of the sealed chunk, at most maxChunkByteCount + 17), sealed chunk
/// ```
/// Integers are big-endian. The key check (a keyed BLAKE2b of the file key) tells a wrong
/// passphrase or key from a damaged file. The last chunk carries the stream's final tag: a file
/// cut anywhere is refused, however it ends.
public enum TenantArchive {
    public static let magic: [UInt8] = Array("AERIEARC".utf8)
    public static let formatVersion: UInt16 = 1
    /// The largest clear chunk a writer makes and a reader accepts (the reader's memory bound).
    public static let maxChunkByteCount = 1 << 20
    static let archiveIDByteCount = 16
    static let keyCheckByteCount = 16
    static let sealedFileKeyByteCount = SecretStream.keyByteCount + SealedBox.overheadByteCount

    /// What an archive is sealed to.
    public enum Sealing: Sendable {
        case passphrase(String)
        /// A recipient's X25519 public key (32 bytes): only its secret key opens the archive.
        case recipient(publicKey: [UInt8])
    }

    /// What opens an archive.
    public enum Opening: Sendable {
        case passphrase(String)
        case recipient(X25519KeyPair)
    }

    static func keyCheck(_ fileKey: SecretBytes) -> [UInt8] {
        fileKey.withUnsafeBytes { key in
            Array("aerie/archive-key-check/v1".utf8).withUnsafeBytes { BLAKE2b.hash($0, outputCount: keyCheckByteCount, key: key) }
        }
    }
}

/// Why an archive is refused: a stable code and a message safe to show (no tenant data).
public struct TenantArchiveError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        /// Not an Aerie tenant archive (no magic, a header cut short).
        public static let notAnArchive = Code("not_an_archive")
        /// An archive of a format version this server does not read.
        public static let unsupportedVersion = Code("unsupported_version")
        /// The passphrase or key given does not open this archive.
        public static let wrongKey = Code("wrong_key")
        /// A chunk altered, reordered or out of bounds, or data after the end.
        public static let damaged = Code("damaged")
        /// The file ends before the archive's final chunk.
        public static let truncated = Code("truncated")
        public var description: String { name }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

/// Writes an archive: `header` first, then `seal` for each chunk, the last with `final: true`.
public final class TenantArchiveWriter {
    /// Random per archive: an importing server records it, so one file is imported once.
    public let archiveID: [UInt8]
    public let header: [UInt8]
    private let stream: SecretStream.Writer

    public init(sealedTo sealing: TenantArchive.Sealing, opsLimit: UInt64 = PasswordKey.defaultOpsLimit,
                memLimit: UInt64 = PasswordKey.defaultMemLimit) throws {
        archiveID = Random.bytes(TenantArchive.archiveIDByteCount)
        var header = TenantArchive.magic
        header.appendBigEndian(UInt64(TenantArchive.formatVersion), bytes: 2)
        header += archiveID
        let fileKey: SecretBytes
        switch sealing {
        case .passphrase(let passphrase):
            let salt = Random.bytes(PasswordKey.saltByteCount)
            fileKey = try PasswordKey.derive(passphrase: passphrase, salt: salt, opsLimit: opsLimit, memLimit: memLimit)
            header.append(1)
            header += salt
            header.appendBigEndian(opsLimit, bytes: 8)
            header.appendBigEndian(memLimit, bytes: 8)
        case .recipient(let publicKey):
            fileKey = .random(count: SecretStream.keyByteCount)
            header.append(2)
            header += try fileKey.withUnsafeBytes { try SealedBox.seal($0, to: publicKey) }
        }
        header += TenantArchive.keyCheck(fileKey)
        stream = try SecretStream.Writer(key: fileKey)
        header += stream.header
        self.header = header
    }

    /// `chunk` (at most `maxChunkByteCount` bytes) sealed and framed, ready to append to the file.
    public func seal(_ chunk: [UInt8], final: Bool) throws -> [UInt8] {
        precondition(chunk.count <= TenantArchive.maxChunkByteCount, "an archive chunk over the limit")
        let sealed = try stream.push(chunk, associatedData: header, final: final)
        var out = [UInt8]()
        out.reserveCapacity(4 + sealed.count)
        out.appendBigEndian(UInt64(sealed.count), bytes: 4)
        out += sealed
        return out
    }
}

/// Reads an archive from bytes fed in pieces of any size, handing back each clear chunk as soon
/// as it is whole: memory holds at most one chunk. Every refusal is a `TenantArchiveError`.
public final class TenantArchiveReader {
    private let opening: TenantArchive.Opening
    private var buffer: [UInt8] = []
    private var header: [UInt8]?
    private var stream: SecretStream.Reader?
    public private(set) var archiveID: [UInt8]?
    public var finished: Bool { stream?.finished ?? false }

    public init(opening: TenantArchive.Opening) {
        self.opening = opening
    }

    /// Takes the next bytes of the file; answers the chunks they complete, opened.
    public func feed(_ bytes: [UInt8]) throws -> [SecretBytes] {
        buffer += bytes
        if stream == nil {
            guard try readHeader() else { return [] }
        }
        var chunks: [SecretBytes] = []
        var offset = 0
        defer { buffer.removeFirst(offset) }
        while buffer.count - offset >= 4 {
            let length = Int(buffer.readBigEndian(at: offset, bytes: 4))
            guard length >= SecretStream.overheadByteCount, length <= TenantArchive.maxChunkByteCount + SecretStream.overheadByteCount
            else { throw TenantArchiveError(.damaged, "a chunk of the archive has an impossible length") }
            guard buffer.count - offset - 4 >= length else { break }
            guard let stream, let header, !stream.finished else {
                throw TenantArchiveError(.damaged, "the archive has data after its final chunk")
            }
            do {
                chunks.append(try stream.pull(Array(buffer[(offset + 4)..<(offset + 4 + length)]), associatedData: header))
            } catch {
                throw TenantArchiveError(.damaged, "a chunk of the archive does not open (altered or out of order)")
            }
            offset += 4 + length
        }
        return chunks
    }

    /// Checks that the file ended where the archive does.
    public func finish() throws {
        guard stream != nil else {
            throw TenantArchiveError(header == nil && buffer.count < TenantArchive.magic.count ? .notAnArchive : .truncated,
                                     "the file ends inside the archive's header")
        }
        guard buffer.isEmpty, finished else {
            throw TenantArchiveError(.truncated, "the archive ends before its final chunk")
        }
    }

    /// Reads the header once enough bytes are in; false while more are needed.
    private func readHeader() throws -> Bool {
        let fixed = TenantArchive.magic.count + 2 + TenantArchive.archiveIDByteCount + 1
        if buffer.count >= TenantArchive.magic.count, Array(buffer[0..<TenantArchive.magic.count]) != TenantArchive.magic {
            throw TenantArchiveError(.notAnArchive, "this is not an Aerie tenant archive")
        }
        guard buffer.count >= fixed else { return false }
        let version = buffer.readBigEndian(at: TenantArchive.magic.count, bytes: 2)
        guard version == UInt64(TenantArchive.formatVersion) else {
            throw TenantArchiveError(
                .unsupportedVersion, "archive format version \(version) is not read here (this server reads \(TenantArchive.formatVersion))")
        }
        let mode = buffer[fixed - 1]
        let keyBytes: Int
        switch (mode, opening) {
        case (1, .passphrase): keyBytes = PasswordKey.saltByteCount + 16
        case (2, .recipient): keyBytes = TenantArchive.sealedFileKeyByteCount
        case (1, .recipient): throw TenantArchiveError(.wrongKey, "the archive is sealed to a passphrase, not a key")
        case (2, .passphrase): throw TenantArchiveError(.wrongKey, "the archive is sealed to a recipient key, not a passphrase")
        default: throw TenantArchiveError(.notAnArchive, "the archive's sealing mode \(mode) is unknown")
        }
        let total = fixed + keyBytes + TenantArchive.keyCheckByteCount + SecretStream.headerByteCount
        guard buffer.count >= total else { return false }
        let fileKey: SecretBytes
        let keyField = Array(buffer[fixed..<(fixed + keyBytes)])
        switch opening {
        case .passphrase(let passphrase):
            let salt = Array(keyField[0..<PasswordKey.saltByteCount])
            let ops = keyField.readBigEndian(at: PasswordKey.saltByteCount, bytes: 8)
            let mem = keyField.readBigEndian(at: PasswordKey.saltByteCount + 8, bytes: 8)
            guard ops <= PasswordKey.maxOpsLimit, mem <= PasswordKey.maxMemLimit else {
                throw TenantArchiveError(.damaged, "the archive asks for more Argon2id work than this server allows")
            }
            do {
                fileKey = try PasswordKey.derive(passphrase: passphrase, salt: salt, opsLimit: ops, memLimit: mem)
            } catch let error as CryptoError {
                throw TenantArchiveError(.wrongKey, error.message)
            }
        case .recipient(let pair):
            do {
                fileKey = try SealedBox.open(keyField, with: pair)
            } catch {
                throw TenantArchiveError(.wrongKey, "the archive is not sealed to this key")
            }
        }
        let checkStart = fixed + keyBytes
        let check = Array(buffer[checkStart..<(checkStart + TenantArchive.keyCheckByteCount)])
        guard ConstantTime.equal(check, TenantArchive.keyCheck(fileKey)) else {
            throw TenantArchiveError(.wrongKey, "the passphrase or key does not open this archive")
        }
        let streamHeader = Array(buffer[(checkStart + TenantArchive.keyCheckByteCount)..<total])
        do {
            stream = try SecretStream.Reader(key: fileKey, header: streamHeader)
        } catch {
            throw TenantArchiveError(.damaged, "the archive's stream header is invalid")
        }
        header = Array(buffer[0..<total])
        archiveID = Array(buffer[(TenantArchive.magic.count + 2)..<(fixed - 1)])
        buffer.removeFirst(total)
        return true
    }
}

extension [UInt8] {
    fileprivate mutating func appendBigEndian(_ value: UInt64, bytes: Int) {
        for shift in stride(from: (bytes - 1) * 8, through: 0, by: -8) { append(UInt8((value >> UInt64(shift)) & 0xff)) }
    }

    fileprivate func readBigEndian(at offset: Int, bytes: Int) -> UInt64 {
        (offset..<(offset + bytes)).reduce(UInt64(0)) { ($0 << 8) | UInt64(self[$1]) }
    }
}
