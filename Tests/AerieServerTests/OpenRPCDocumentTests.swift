import AerieClient
import AerieCore
import AerieServer
import AerieTesting
import Foundation
import Testing

/// The OpenRPC document `rpc.discover` serves: valid OpenRPC 1.x by our own reading of the
/// specification (`OpenRPCSchema`: a schema we wrote, plus the uniqueness rules in Swift), and the
/// same as docs/openrpc.json, the copy for client generators.
/// `AERIE_UPDATE_OPENRPC=1 ./scripts/test --filter OpenRPCDocumentTests` rewrites the copy.
@Suite(.timeLimit(.minutes(3))) struct OpenRPCDocumentTests {
    static var copyURL: URL { ACAPyAgent.packageRoot.appendingPathComponent("docs/openrpc.json") }

    @Test func theServedDocumentIsValidAndDocsHoldsIt() async throws {
        var served: JSONValue = nil
        try await LiveServer.with { server in
            let client = try await AerieClient.connect(host: "127.0.0.1", port: server.port)
            defer { Task { await client.close() } }
            served = try await client.call("rpc.discover")
        }
        guard case .array(let methods)? = served["methods"] else {
            Issue.record("rpc.discover lists no methods")
            return
        }
        #expect(methods.count > 50)
        for failure in try OpenRPCSchema.failures(served) {
            Issue.record("rpc.discover is not valid OpenRPC at \(failure)")
        }

        let text = Self.pretty(served) + "\n"
        if ProcessInfo.processInfo.environment["AERIE_UPDATE_OPENRPC"] == "1" {
            try text.write(to: Self.copyURL, atomically: true, encoding: .utf8)
        }
        let copy = try? String(contentsOf: Self.copyURL, encoding: .utf8)
        #expect(
            copy == text,
            "docs/openrpc.json is not what rpc.discover serves: AERIE_UPDATE_OPENRPC=1 ./scripts/test --filter OpenRPCDocumentTests rewrites it")
    }

    /// The check is only evidence if it refuses what the specification forbids.
    @Test func theCheckRefusesWhatTheSpecificationForbids() throws {
        let method: JSONValue = [
            "name": "probe.echo", "summary": "Echoes.", "paramStructure": "by-name",
            "params": [["name": "text", "required": true, "description": "", "schema": ["type": "string"]]],
            "result": ["name": "result", "schema": [:]], "x-access": "tenant",
        ]
        func document(_ method: JSONValue, openrpc: JSONValue = "1.2.6", extra: [String: JSONValue] = [:]) -> JSONValue {
            var members: [String: JSONValue] = ["openrpc": openrpc, "info": ["title": "Aerie", "version": "0"], "methods": [method]]
            members.merge(extra) { $1 }
            return .object(members)
        }
        func without(_ key: String, _ value: JSONValue) -> JSONValue {
            guard case .object(var members) = value else { return value }
            members[key] = nil
            return .object(members)
        }
        func with(_ key: String, _ member: JSONValue, _ value: JSONValue) -> JSONValue {
            guard case .object(var members) = value else { return value }
            members[key] = member
            return .object(members)
        }
        #expect(try OpenRPCSchema.failures(document(method)).isEmpty)
        let rich = with(
            "errors", [["code": -32000, "message": "busy", "data": ["retry": 1]]],
            with("tags", [["name": "probe"]], with("paramStructure", "either", method)))
        #expect(
            try OpenRPCSchema.failures(
                document(
                    rich,
                    extra: ["components": ["schemas": ["Text": ["type": ["string", "null"], "enum": ["a", nil]]]]]
                )
            ).isEmpty)

        let invalid: [(String, JSONValue)] = [
            ("a type that is not a JSON type", document(with("params", [["name": "v", "schema": ["type": "any"]]], method))),
            ("a result without a schema", document(with("result", ["name": "result"], method))),
            ("a method without params", document(without("params", method))),
            ("a param without a schema", document(with("params", [["name": "v"]], method))),
            ("an unknown method member", document(with("returns", "x", method))),
            ("an unknown paramStructure", document(with("paramStructure", "by-order", method))),
            ("an unreleased openrpc version", document(method, openrpc: "9.9.9")),
            ("an unknown top-level member", document(method, extra: ["endpoints": []])),
            ("info without version", without("info", document(method)).merging(["info": ["title": "Aerie"]])),
            ("info without title", without("info", document(method)).merging(["info": ["version": "0"]])),
            ("no methods", without("methods", document(method))),
            ("a method without a name", document(without("name", method))),
            ("a param without a name", document(with("params", [["schema": [:]]], method))),
            ("two params of one name", document(with("params", [["name": "v", "schema": [:]], ["name": "v", "schema": [:]]], method))),
            ("an openrpc version that is not a string", document(method, openrpc: 1)),
            ("an error with a string code", document(with("errors", [["code": "1", "message": "m"]], method))),
            ("an error without a message", document(with("errors", [["code": 1]], method))),
            ("a tag without a name", document(with("tags", [["summary": "s"]], method))),
            ("a type list holding a non-type", document(with("params", [["name": "v", "schema": ["type": ["string", "text"]]]], method))),
            ("anyOf that is not a list", document(with("params", [["name": "v", "schema": ["anyOf": ["type": "string"]]]], method))),
            ("items that is a string", document(with("params", [["name": "v", "schema": ["type": "array", "items": "string"]]], method))),
            ("required that holds a number", document(with("params", [["name": "v", "schema": ["required": [1]]]], method))),
            ("enum that is not a list", document(with("params", [["name": "v", "schema": ["enum": "a"]]], method))),
            ("a property schema that is a string", document(with("params", [["name": "v", "schema": ["properties": ["a": "string"]]]], method))),
            ("an unknown schema keyword", document(with("params", [["name": "v", "schema": ["item": ["type": "string"]]]], method))),
            ("components with an unknown member", document(method, extra: ["components": ["methods": [:]]])),
        ]
        for (what, instance) in invalid {
            #expect(try !OpenRPCSchema.failures(instance).isEmpty, "\(what) passed")
        }
        let twice = document(method).merging(["methods": [method, method]])
        #expect(OpenRPCSchema.structuralFailures(twice).count == 1, "two methods of one name passed")
    }

    @Test func paramShorthandsBecomeJSONSchemas() {
        #expect(ParamDoc("v", "string").schema == ["type": "string"])
        #expect(ParamDoc("v", "any").schema == [:])
        #expect(ParamDoc("v", "integer|string").schema == ["type": ["integer", "string"]])
        #expect(ParamDoc("v", "string[]").schema == ["type": "array", "items": ["type": "string"]])
        #expect(
            ParamDoc("v", "string|string[]").schema
                == ["anyOf": [["type": "string"], ["type": "array", "items": ["type": "string"]]]])
    }

    /// Sorted keys, two spaces per level: a stable text that diffs well.
    static func pretty(_ value: JSONValue, indent: String = "") -> String {
        let inner = indent + "  "
        switch value {
        case .array(let elements) where !elements.isEmpty:
            return "[\n" + elements.map { inner + pretty($0, indent: inner) }.joined(separator: ",\n") + "\n\(indent)]"
        case .object(let members) where !members.isEmpty:
            return "{\n"
                + members.sorted { $0.key < $1.key }
                .map { inner + JSONValue.string($0.key).jsonString + ": " + pretty($0.value, indent: inner) }
                .joined(separator: ",\n") + "\n\(indent)}"
        default:
            return value.jsonString
        }
    }
}

extension JSONValue {
    fileprivate func merging(_ other: [String: JSONValue]) -> JSONValue {
        guard case .object(var members) = self else { return self }
        members.merge(other) { $1 }
        return .object(members)
    }
}
