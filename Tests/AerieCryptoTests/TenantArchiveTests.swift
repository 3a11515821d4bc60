import Foundation
import Testing

@testable import AerieCrypto

/// The sealed container of tenant archives (`TenantArchiveWriter` / `TenantArchiveReader`):
/// whatever is cut, altered, swapped or opened with the wrong secret is refused with its code,
/// fed in pieces of any size.
@Suite(.timeLimit(.minutes(5))) struct TenantArchiveTests {
    /// The cheapest Argon2id libsodium allows, so the tests spend their time on the format.
    static func writer(_ sealing: TenantArchive.Sealing) throws -> TenantArchiveWriter {
        try TenantArchiveWriter(sealedTo: sealing, opsLimit: 1, memLimit: 8 << 20)
    }

    static let chunks: [[UInt8]] = [Array("first".utf8), Random.bytes(70_000), [], Array("last".utf8)]

    static func archive(_ sealing: TenantArchive.Sealing = .passphrase("a passphrase")) throws -> [UInt8] {
        let writer = try writer(sealing)
        var file = writer.header
        for (n, chunk) in chunks.enumerated() { file += try writer.seal(chunk, final: n == chunks.count - 1) }
        return file
    }

    /// Opens `file` fed `step` bytes at a time; answers the chunks.
    static func open(_ file: [UInt8], _ opening: TenantArchive.Opening = .passphrase("a passphrase"), step: Int = 4096) throws -> [[UInt8]] {
        let reader = TenantArchiveReader(opening: opening)
        var out: [[UInt8]] = []
        for start in stride(from: 0, to: file.count, by: step) {
            out += try reader.feed(Array(file[start..<min(start + step, file.count)])).map { $0.withUnsafeBytes { Array($0) } }
        }
        try reader.finish()
        return out
    }

    static func refusal(_ file: [UInt8], _ opening: TenantArchive.Opening = .passphrase("a passphrase")) -> TenantArchiveError.Code? {
        do {
            _ = try open(file, opening)
            return nil
        } catch let error as TenantArchiveError {
            return error.code
        } catch {
            return nil
        }
    }

    @Test func roundTripsWithAPassphraseAndWithARecipientKeyInPiecesOfAnySize() throws {
        let file = try Self.archive()
        for step in [1, 7, 4096, file.count] { #expect(try Self.open(file, step: step) == Self.chunks) }
        let recipient = X25519KeyPair.generate()
        let sealed = try Self.archive(.recipient(publicKey: recipient.publicKey))
        #expect(try Self.open(sealed, .recipient(recipient)) == Self.chunks)
        #expect(Self.refusal(sealed, .recipient(.generate())) == .wrongKey)
        #expect(Self.refusal(sealed, .passphrase("a passphrase")) == .wrongKey)
        // Nothing of the clear chunks is in the file.
        #expect(file.firstRange(of: Array("first".utf8)) == nil)
    }

    @Test func cutAlteredReorderedOrWronglyOpenedArchivesAreRefused() throws {
        let file = try Self.archive()
        #expect(Self.refusal(file, .passphrase("another passphrase")) == .wrongKey)
        // Cut anywhere: in the header, between chunks, inside one, just before the end.
        let headerEnd = try Self.writer(.passphrase("x-passphrase")).header.count
        for cut in [3, 20, headerEnd, headerEnd + 10, file.count - 1, file.count - 30] {
            let code = Self.refusal(Array(file.prefix(cut)))
            #expect(code == .truncated || code == .notAnArchive, "cut at \(cut): \(String(describing: code))")
        }
        // Cut at a chunk boundary: all chunks but the final one are whole, still refused.
        let writer = try Self.writer(.passphrase("a passphrase"))
        let whole = writer.header + (try writer.seal([1, 2, 3], final: false))
        #expect(Self.refusal(whole) == .truncated)
        // A byte altered in the header (the associated data of every chunk) or in a chunk.
        for position in [headerEnd - 1, headerEnd + 30, file.count - 5] {
            var altered = file
            altered[position] ^= 0x40
            #expect(Self.refusal(altered) != nil, "a byte altered at \(position)")
        }
        // Another format version, no magic.
        var version = file
        version[9] = 2
        #expect(Self.refusal(version) == .unsupportedVersion)
        #expect(Self.refusal(Array(repeating: 0x41, count: 100)) == .notAnArchive)
        // Two chunks swapped, or one repeated.
        let w = try Self.writer(.passphrase("a passphrase"))
        let (a, b, c) = (try w.seal([1], final: false), try w.seal([2], final: false), try w.seal([3], final: true))
        #expect(try Self.open(w.header + a + b + c) == [[1], [2], [3]])
        #expect(Self.refusal(w.header + b + a + c) == .damaged)
        #expect(Self.refusal(w.header + a + a + b + c) == .damaged)
        // Data after the final chunk.
        #expect(Self.refusal(w.header + a + b + c + a) == .damaged)
        // A length past the chunk limit is refused before anything is buffered.
        #expect(Self.refusal(w.header + [0xff, 0xff, 0xff, 0xff]) == .damaged)
    }

    @Test func argon2idParametersFromAHeaderAreBounded() throws {
        var file = try Self.archive()
        // opslimit (8 bytes after magic, version, id, mode and salt) set past the bound.
        let ops = 8 + 2 + 16 + 1 + 16
        for i in 0..<8 { file[ops + i] = 0xff }
        #expect(Self.refusal(file) == .damaged)
    }
}
