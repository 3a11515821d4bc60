import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Small secret files under `AERIE_HOME` (master key, admin token): created exclusively with mode
/// 0600 so they are never, even briefly, readable by others.
enum SecretFile {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func read(_ url: URL) throws -> String? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        if let mode = attributes[.posixPermissions] as? NSNumber, mode.intValue & 0o077 != 0 {
            throw Failure(description: "\(url.path) is readable by group or others; run: chmod 600 \(url.path)")
        }
        return try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Writes a new file; fails if it already exists.
    static func create(_ url: URL, contents: String) throws {
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            throw Failure(description: "cannot create \(url.path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let bytes = Array((contents + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(fd) == 0 else {
            throw Failure(description: "cannot write \(url.path): \(String(cString: strerror(errno)))")
        }
    }

    /// Replaces a file atomically (write a temporary 0600 file, then rename).
    static func replace(_ url: URL, contents: String) throws {
        let temporary = url.appendingPathExtension("new")
        try? FileManager.default.removeItem(at: temporary)
        try create(temporary, contents: contents)
        guard rename(temporary.path, url.path) == 0 else {
            throw Failure(description: "cannot replace \(url.path): \(String(cString: strerror(errno)))")
        }
    }
}

extension SecretFile {
    /// Renames `source` over `destination` (atomic on one file system).
    static func move(_ source: URL, to destination: URL) throws {
        guard rename(source.path, destination.path) == 0 else {
            throw Failure(description: "cannot rename \(source.path) to \(destination.path): \(String(cString: strerror(errno)))")
        }
    }

    /// Makes the creation or renaming of `file` durable (fsync of its directory).
    static func syncDirectory(of file: URL) throws {
        let directory = file.deletingLastPathComponent().path
        let fd = open(directory, O_RDONLY | O_DIRECTORY)
        guard fd >= 0 else {
            throw Failure(description: "cannot open \(directory): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        guard fsync(fd) == 0 else {
            throw Failure(description: "cannot sync \(directory): \(String(cString: strerror(errno)))")
        }
    }
}
