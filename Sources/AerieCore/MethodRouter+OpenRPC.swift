extension MethodRouter {
    /// An OpenRPC 1.2 document describing every registered method, sorted by name. It is valid
    /// OpenRPC by our own schema of the specification's rules (`OpenRPCDocumentTests`);
    /// docs/openrpc.json is a copy.
    public func openRPCDocument(title: String, version: String) -> JSONValue {
        let described: [JSONValue] = methods.values.sorted { $0.name < $1.name }.map { method in
            let params: [JSONValue] = method.params.map { param in
                [
                    "name": .string(param.name),
                    "required": .bool(param.required),
                    "description": .string(param.summary),
                    "schema": param.schema,
                ]
            }
            return [
                "name": .string(method.name),
                "summary": .string(method.summary),
                "paramStructure": "by-name",
                "params": .array(params),
                "result": ["name": "result", "schema": [:]],
                "x-access": .string(method.access.rawValue),
                "x-plugin": .string(method.plugin),
            ]
        }
        return [
            "openrpc": "1.2.6",
            "info": ["title": .string(title), "version": .string(version)],
            "methods": .array(described),
        ]
    }
}

extension ParamDoc {
    /// The JSON Schema of `type`, a shorthand: a JSON Schema type name (`string`, `integer`...),
    /// `any`, `T[]` for an array of `T`, or alternatives joined by `|` (`string|string[]`).
    public var schema: JSONValue {
        let alternatives = type.split(separator: "|").map { String($0) }
        if alternatives.contains("any") || alternatives.isEmpty { return [:] }
        if alternatives.count == 1 { return Self.schema(of: alternatives[0]) }
        if alternatives.allSatisfy({ !$0.hasSuffix("[]") }) {
            return ["type": .array(alternatives.map { .string($0) })]
        }
        return ["anyOf": .array(alternatives.map(Self.schema(of:)))]
    }

    private static func schema(of alternative: String) -> JSONValue {
        if alternative.hasSuffix("[]") {
            return ["type": "array", "items": schema(of: String(alternative.dropLast(2)))]
        }
        return ["type": .string(alternative)]
    }
}
