import AerieCore
import AerieCrypto
import Foundation

/// What a tenant archive's sealed body holds (format version 1): JSON lines, split into chunks
/// wherever the chunk size falls.
///
/// 1. the manifest: `{"archive":"aerie-tenant","formatVersion":1,"tenantId":…,"exportedAt":…,
///    "dataKey":base64,"tenant":{the tenant's row},"tables":[names, parents first]}`
/// 2. a page of a table: `{"table":name,"rows":[{row as to_jsonb}, …]}`, any number
/// 3. the end: `{"end":{"rows":{table: count, …}}}`, checked by the import
enum TenantArchiveBody {
    static let kind = "aerie-tenant"
    /// Clear bytes per sealed chunk.
    static let chunkByteCount = 256 << 10
    /// The longest line a reader keeps whole (a page of rows).
    static let maxLineByteCount = 64 << 20

    static func manifest(tenant: TenantID, dataKey: [UInt8], tenantRow: String, tables: [String]) -> [UInt8] {
        let head: JSONValue = [
            "archive": .string(kind), "formatVersion": .int(Int64(TenantArchive.formatVersion)),
            "tenantId": .string(tenant.rawValue), "exportedAt": .string(Date().iso8601Text),
            "dataKey": .string(Base64.encode(dataKey)), "tables": .array(tables.map(JSONValue.string)),
        ]
        var text = head.serialized()
        // The row is JSON text from the database: spliced in, not parsed.
        text.removeLast()
        return text + Array((",\"tenant\":" + tenantRow + "}\n").utf8)
    }

    static func page(table: String, rows: [String]) -> [UInt8] {
        Array("{\"table\":".utf8) + JSONValue.string(table).serialized() + Array((",\"rows\":[" + rows.joined(separator: ",") + "]}\n").utf8)
    }

    static func end(counts: [String: Int]) -> [UInt8] {
        let value: JSONValue = ["end": ["rows": .object(counts.mapValues { .int(Int64($0)) })]]
        return value.serialized() + [UInt8(ascii: "\n")]
    }
}

/// Seals body bytes into chunks of `TenantArchiveBody.chunkByteCount` and hands each on, framed.
final class TenantArchiveChunker {
    private let writer: TenantArchiveWriter
    private let emit: ([UInt8]) throws -> Void
    private var pending: [UInt8] = []

    init(writer: TenantArchiveWriter, emit: @escaping ([UInt8]) throws -> Void) throws {
        self.writer = writer
        self.emit = emit
        try emit(writer.header)
    }

    func append(_ bytes: [UInt8]) throws {
        pending += bytes
        while pending.count >= TenantArchiveBody.chunkByteCount {
            try emit(try writer.seal(Array(pending[0..<TenantArchiveBody.chunkByteCount]), final: false))
            pending.removeFirst(TenantArchiveBody.chunkByteCount)
        }
    }

    /// Seals what is left as the final chunk.
    func finish() throws {
        try emit(try writer.seal(pending, final: true))
        SecretBytes.wipe(&pending)
    }
}

/// Splits opened chunks back into lines, each at most `maxLineByteCount`.
struct TenantArchiveLines {
    private var pending: [UInt8] = []

    mutating func feed(_ chunk: SecretBytes, line: ([UInt8]) throws -> Void) throws {
        chunk.withUnsafeBytes { pending.append(contentsOf: $0) }
        var start = 0
        while let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
            try line(Array(pending[start..<newline]))
            start = newline + 1
        }
        pending.removeFirst(start)
        guard pending.count <= TenantArchiveBody.maxLineByteCount else {
            throw AerieError.invalidParams("the archive holds a record over the size limit", field: "data")
        }
    }

    var isEmpty: Bool { pending.isEmpty }
}
