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
    /// members in the order `JSONValue.serialized()` writes, a text result copied as it is.
    static func result(id: JSONValue, _ result: MethodResult) -> [UInt8] {
        let capacity = if case .text(let text) = result { text.bytes.count + 64 } else { 0 }
        return JSONText(reservingCapacity: capacity) { writer in
            writer.object { members in
                members.member("id", id)
                members.member("jsonrpc", string: "2.0")
                members.member("result") { writer in
                    switch result {
                    case .value(let value): writer.value(value)
                    case .text(let text): writer.text(text)
                    }
                }
            }
        }.bytes
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
