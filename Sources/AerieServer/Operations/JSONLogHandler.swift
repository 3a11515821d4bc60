import AerieCore
import Foundation
import Logging
import Synchronization

/// `AERIE_LOG_FORMAT=json`: one JSON object per line on standard error, for log shippers:
/// `time` (UTC, milliseconds), `level`, `label`, `message`, `source`, then the metadata as
/// top-level members (`request` ties together the lines of one RPC call or inbound message,
/// `session`, `method`, `tenant`, ...). A metadata key that collides with one of those five is
/// written as `meta.<key>`. Messages and metadata are what the code logs in text format too:
/// never tokens, keys or message contents.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let write: @Sendable ([UInt8]) -> Void

    /// `write` receives each line, newline included (standard error by default).
    public init(label: String, write: @escaping @Sendable ([UInt8]) -> Void = JSONLogHandler.standardError) {
        self.label = label
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var members: [String: JSONValue] = [
            "time": .string(Self.timestamp(Date())),
            "level": .string(event.level.rawValue),
            "label": .string(label),
            "message": .string(event.message.description),
            "source": .string(event.source),
        ]
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        for (key, value) in merged {
            members[members[key] == nil ? key : "meta.\(key)"] = Self.json(value)
        }
        var line = JSONValue.object(members).serialized()
        line.append(UInt8(ascii: "\n"))
        write(line)
    }

    static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .array(let values): .array(values.map(json))
        case .dictionary(let members): .object(members.mapValues(json))
        }
    }

    /// RFC 3339 in UTC with milliseconds, e.g. `2026-11-23T04:05:06.789Z`.
    static func timestamp(_ date: Date) -> String {
        let total = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var seconds = time_t(total >= 0 ? total / 1000 : (total - 999) / 1000)
        let millis = Int(total - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }

    private static let lock = Mutex(())

    /// One `write(2)` per line under a lock, so lines of concurrent tasks never interleave.
    public static let standardError: @Sendable ([UInt8]) -> Void = { line in
        lock.withLock { _ in
            line.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let written = Foundation.write(2, raw.baseAddress! + offset, raw.count - offset)
                    if written <= 0 { return }
                    offset += written
                }
            }
        }
    }
}

extension AerieConfiguration.Operations {
    /// Sets up swift-log for `aerie-server`: text (swift-log's stream handler, `TextLogHandler`) or JSON lines, at
    /// `logLevel`, on standard error.
    public func bootstrapLogging() {
        let level = logLevel
        switch logFormat {
        case .text:
            LoggingSystem.bootstrap { label in
                var handler = TextLogHandler(StreamLogHandler.standardError(label: label))
                handler.logLevel = level
                return handler
            }
        case .json:
            LoggingSystem.bootstrap { label in
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }
}
