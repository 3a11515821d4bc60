import AerieCore

/// A request line after JSON parsing and JSON-RPC 2.0 validation.
struct RPCRequest: Sendable {
    /// nil for a notification, which gets no response.
    var id: JSONValue?
    var method: String
    var params: JSONValue?
}

/// What one line holds.
enum RPCIncoming: Sendable {
    case single(Result<RPCRequest, RPCInvalidRequest>)
    case batch([Result<RPCRequest, RPCInvalidRequest>])
    /// Not JSON at all: -32700 with id null.
    case parseError(String)
    /// An invalid batch as a whole (empty, too large): one -32600 error.
    case invalidBatch(String)
}

/// A JSON value that is not a valid request; answered -32600 with whatever id could be read.
struct RPCInvalidRequest: Error, Sendable {
    var id: JSONValue
    var message: String
}

enum RPCEnvelope {
    static func parse(_ bytes: some Collection<UInt8>, maxBatchEntries: Int) -> RPCIncoming {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes)
        } catch let error as JSONValue.ParseError {
            return .parseError(error.description)
        } catch {
            return .parseError("invalid JSON")
        }
        if case .array(let entries) = value {
            guard !entries.isEmpty else { return .invalidBatch("empty batch") }
            guard entries.count <= maxBatchEntries else {
                return .invalidBatch("batch has \(entries.count) entries; the limit is \(maxBatchEntries)")
            }
            return .batch(entries.map(validate))
        }
        return .single(validate(value))
    }

    static func validate(_ value: JSONValue) -> Result<RPCRequest, RPCInvalidRequest> {
        guard case .object(let fields) = value else {
            return .failure(RPCInvalidRequest(id: .null, message: "a request must be a JSON object"))
        }
        var id: JSONValue? = nil
        if let rawID = fields["id"] {
            switch rawID {
            case .string, .int, .double, .null: id = rawID
            default:
                return .failure(RPCInvalidRequest(id: .null, message: "id must be a string, a number or null"))
            }
        }
        let replyID = id ?? .null
        guard fields["jsonrpc"] == .string("2.0") else {
            return .failure(RPCInvalidRequest(id: replyID, message: "jsonrpc must be \"2.0\""))
        }
        guard case .string(let method)? = fields["method"], !method.isEmpty else {
            return .failure(RPCInvalidRequest(id: replyID, message: "method must be a non-empty string"))
        }
        let params = fields["params"]
        switch params {
        case nil, .object?, .array?: break
        default:
            return .failure(RPCInvalidRequest(id: replyID, message: "params must be an object or an array"))
        }
        return .success(RPCRequest(id: id, method: method, params: params))
    }

    /// The response line's text (without its newline): `{"id":..,"jsonrpc":"2.0","result":..}`,
    /// members in the order `JSONValue.serialized()` writes. A text result is not copied into
    /// it: it is the response's middle piece, copied once, into the socket's buffer.
    static func result(id: JSONValue, _ result: MethodResult) -> RPCResponseText {
        switch result {
        case .value(let value):
            let text = JSONText { writer in
                writer.object { members in
                    members.member("id", id)
                    members.member("jsonrpc", string: "2.0")
                    members.member("result", value)
                }
            }
            return RPCResponseText(text.bytes)
        case .text(let text):
            var head = Array(#"{"id":"#.utf8)
            id.write(into: &head)
            head.append(contentsOf: #","jsonrpc":"2.0","result":"#.utf8)
            return RPCResponseText(head: head, middle: text.bytes, closesObject: true)
        }
    }

    static func error(id: JSONValue, _ error: AerieError) -> JSONValue {
        var data = error.data
        data["code"] = .string(error.code.name)
        if let field = error.field { data["field"] = .string(field) }
        return [
            "jsonrpc": "2.0",
            "id": id,
            "error": [
                "code": .int(Int64(error.code.rpcCode)),
                "message": .string(error.message),
                "data": .object(data),
            ],
        ]
    }
}

/// One response line's text, without its newline, in the pieces it was made of: the envelope
/// around a method's text result, and that result (a 100-message mailbox page is 50 KB), which
/// is copied once, into the socket's buffer, rather than into an array of the whole line first.
/// The closing brace is a flag, not a shared one-byte array whose reference count every response
/// would bounce between the cores.
struct RPCResponseText: Sendable {
    let head: [UInt8]
    let middle: [UInt8]
    let closesObject: Bool

    init(head: [UInt8], middle: [UInt8], closesObject: Bool) {
        self.head = head
        self.middle = middle
        self.closesObject = closesObject
    }

    /// A text made in one piece.
    init(_ bytes: [UInt8]) {
        self.init(head: bytes, middle: [], closesObject: false)
    }

    var byteCount: Int { head.count + middle.count + (closesObject ? 1 : 0) }

    /// The line's bytes, piece by piece in order: the one description of what a response line
    /// is made of, for a batch's array (`write(into:)`) and the socket's buffer
    /// (`RPCServer.frame`; this file stays free of NIO for the fuzz target).
    func withPieces(_ body: (UnsafeRawBufferPointer) -> Void) {
        head.withUnsafeBytes(body)
        middle.withUnsafeBytes(body)
        if closesObject { withUnsafeBytes(of: UInt8(ascii: "}"), body) }
    }

    func write(into bytes: inout [UInt8]) {
        withPieces { bytes.append(contentsOf: $0) }
    }
}
