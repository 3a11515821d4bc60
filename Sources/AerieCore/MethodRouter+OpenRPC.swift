extension MethodRouter {
    /// An OpenRPC 1.2 document describing every registered method, sorted by name.
    public func openRPCDocument(title: String, version: String) -> JSONValue {
        let described: [JSONValue] = methods.values.sorted { $0.name < $1.name }.map { method in
            let params: [JSONValue] = method.params.map { param in
                [
                    "name": .string(param.name),
                    "required": .bool(param.required),
                    "description": .string(param.summary),
                    "schema": ["type": .string(param.type)],
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
