import AerieClient
import AerieCore
import AerieTesting
import Foundation
import Testing

/// The JSON-RPC contract of DESIGN.md, exercised over a real TCP session against a live server.
@Suite(.serialized, .timeLimit(.minutes(10))) struct JSONRPCConformanceTests {
    static func response(_ line: String?) throws -> JSONValue {
        try JSONValue(parsing: try #require(line))
    }

    @Test func pingOverARawLine() async throws {
        try await LiveServer.with(extraPlugins: [ProbePlugin()]) { server in
            let raw = try await RawLineClient.connect(port: server.port)
            defer { Task { await raw.close() } }
            try await raw.send(#"{"jsonrpc":"2.0","id":1,"method":"system.ping"}"# + "\n")
            let reply = try Self.response(await raw.readLine())
            #expect(reply == ["jsonrpc": "2.0", "id": 1, "result": "pong"])
        }
    }

    @Test func everyStandardErrorCode() async throws {
        try await LiveServer.with(extraPlugins: [ProbePlugin()]) { server in
            let raw = try await RawLineClient.connect(port: server.port)
            defer { Task { await raw.close() } }

            try await raw.send("{not json\n")
            var reply = try Self.response(await raw.readLine())
            #expect(reply["error"]?["code"] == -32700)
            #expect(reply["id"] == .null)

            try await raw.send(#"{"jsonrpc":"1.0","id":7,"method":"system.ping"}"# + "\n")
            reply = try Self.response(await raw.readLine())
            #expect(reply["error"]?["code"] == -32600)
            #expect(reply["id"] == 7)

            try await raw.send(#"{"jsonrpc":"2.0","id":8,"method":"no.such"}"# + "\n")
            reply = try Self.response(await raw.readLine())
            #expect(reply["error"]?["code"] == -32601)

            try await raw.send(#"{"jsonrpc":"2.0","id":9,"method":"probe.sleep","params":{"milliseconds":"x"}}"# + "\n")
            reply = try Self.response(await raw.readLine())
            #expect(reply["error"]?["code"] == -32602)
            #expect(reply["error"]?["data"]?["field"] == "milliseconds")
            #expect(reply["error"]?["data"]?["code"] == "invalid_params")

            try await raw.send(#"{"jsonrpc":"2.0","id":10,"method":"probe.crash"}"# + "\n")
            reply = try Self.response(await raw.readLine())
            #expect(reply["error"]?["code"] == -32603)
            #expect(reply["error"]?["message"] == "internal error")
            #expect(!(try #require(reply.jsonString as String?)).contains("SELECT"))

            try await raw.send(#"{"jsonrpc":"2.0","id":11,"method":"settings.get","params":{"key":"a"}}"# + "\n")
            reply = try Self.response(await raw.readLine())
            #expect(reply["error"]?["code"] == -32001)
            #expect(reply["error"]?["data"]?["code"] == "unauthenticated")

            try await raw.send("[]\n")
            reply = try Self.response(await raw.readLine())
            #expect(reply["error"]?["code"] == -32600)

            try await raw.send("\u{FF}\u{FE}garbage\u{01}\n")
            reply = try Self.response(await raw.readLine())
            #expect(reply["error"]?["code"] == -32700)

            // Still usable after all of that.
            try await raw.send(#"{"jsonrpc":"2.0","id":12,"method":"system.ping"}"# + "\n")
            reply = try Self.response(await raw.readLine())
            #expect(reply["result"] == "pong")
        }
    }

    @Test func invalidBytesAreAParseError() async throws {
        try await LiveServer.with { server in
            let raw = try await RawLineClient.connect(port: server.port)
            defer { Task { await raw.close() } }
            try await raw.send([0x7B, 0x22, 0xC3, 0x28, 0x22, 0x3A, 0x31, 0x7D, 0x0A])  // {"\xC3(":1} invalid UTF-8
            let reply = try Self.response(await raw.readLine())
            #expect(reply["error"]?["code"] == -32700)
        }
    }

    @Test func batchWithValidInvalidAndNotifications() async throws {
        try await LiveServer.with { server in
            let raw = try await RawLineClient.connect(port: server.port)
            defer { Task { await raw.close() } }
            let batch = """
                [{"jsonrpc":"2.0","id":1,"method":"system.ping"},\
                {"jsonrpc":"2.0","method":"system.ping"},\
                {"jsonrpc":"2.0","id":2,"method":"nope"},\
                42,\
                {"jsonrpc":"2.0","id":3,"method":"system.version"}]
                """
            try await raw.send(batch + "\n")
            let reply = try Self.response(await raw.readLine())
            guard case .array(let entries) = reply else {
                Issue.record("batch answer is not an array: \(reply)")
                return
            }
            #expect(entries.count == 4)  // the notification gets nothing
            let byID = Dictionary(entries.compactMap { e in e["id"].map { ($0, e) } }, uniquingKeysWith: { a, _ in a })
            #expect(byID[1]?["result"] == "pong")
            #expect(byID[2]?["error"]?["code"] == -32601)
            #expect(byID[3]?["result"]?["name"] == "aerie")
            #expect(entries.contains { $0["id"] == .null && $0["error"]?["code"] == -32600 })

            // A batch of notifications only: no line at all; the next answer is for the next request.
            try await raw.send(#"[{"jsonrpc":"2.0","method":"system.ping"}]"# + "\n")
            try await raw.send(#"{"jsonrpc":"2.0","method":"system.ping"}"# + "\n")
            try await raw.send(#"{"jsonrpc":"2.0","id":"after","method":"system.ping"}"# + "\n")
            let next = try Self.response(await raw.readLine())
            #expect(next["id"] == "after")
        }
    }

    /// Methods that answer prepared text (`messages.download`, `messages.downloadPage`: the text
    /// is sent between the envelope's pieces, not copied into it) answer valid lines alone and
    /// inside a batch, with any id, an awkward string one included.
    @Test func textResultsAloneAndInABatch() async throws {
        try await LiveServer.with { server in
            let admin = try await server.adminClient()
            let created = try await admin.call("admin.tenants.create", params: ["label": "texts"])
            await admin.close()
            let token = try #require(created["token"]?.stringValue)
            let raw = try await RawLineClient.connect(port: server.port)
            defer { Task { await raw.close() } }
            try await raw.send(#"{"jsonrpc":"2.0","id":0,"method":"session.authenticate","params":{"token":"\#(token)"}}"# + "\n")
            #expect(try Self.response(await raw.readLine())["result"] != nil)

            try await raw.send(#"{"jsonrpc":"2.0","id":"a \"quoted\" id","method":"messages.download"}"# + "\n")
            let alone = try Self.response(await raw.readLine())
            #expect(alone == ["jsonrpc": "2.0", "id": "a \"quoted\" id", "result": []])

            let batch = """
                [{"jsonrpc":"2.0","id":1,"method":"messages.download"},\
                {"jsonrpc":"2.0","id":2,"method":"messages.downloadPage"},\
                {"jsonrpc":"2.0","id":3,"method":"system.ping"}]
                """
            try await raw.send(batch + "\n")
            guard case .array(let entries) = try Self.response(await raw.readLine()) else {
                Issue.record("batch answer is not an array")
                return
            }
            let byID = Dictionary(entries.compactMap { e in e["id"].map { ($0, e) } }, uniquingKeysWith: { a, _ in a })
            #expect(entries.count == 3)
            #expect(byID[1]?["result"] == [])
            #expect(byID[2]?["result"] == ["messages": [], "nextCursor": nil])
            #expect(byID[3]?["result"] == "pong")
        }
    }

    /// Batch entries count toward the session's in-flight limit: two 30-entry batches on a
    /// session limited to 4 never run more than 4 calls at once, and every entry is answered.
    @Test func batchEntriesCountTowardTheInFlightLimit() async throws {
        let probe = ProbePlugin()
        try await LiveServer.with(extraPlugins: [probe], rpc: { $0.maxInFlightPerSession = 4 }) { server in
            let raw = try await RawLineClient.connect(port: server.port)
            defer { Task { await raw.close() } }
            func batch(_ first: Int) -> String {
                "[" + (first..<first + 30).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"probe.track","params":{"milliseconds":20,"tag":\#($0)}}"# }
                    .joined(separator: ",") + "]\n"
            }
            try await raw.send(batch(0) + batch(100))
            var ids = Set<Int64>()
            for _ in 0..<2 {
                guard case .array(let entries) = try Self.response(await raw.readLine()) else {
                    Issue.record("a batch answer is not an array")
                    return
                }
                #expect(entries.count == 30)
                for entry in entries { ids.insert(try #require(entry["result"]?.intValue)) }
            }
            #expect(ids == Set((0..<30).map(Int64.init) + (100..<130).map(Int64.init)))
            #expect(probe.concurrency.most <= 4, "\(probe.concurrency.most) calls ran at once")
            #expect(probe.concurrency.most >= 2)
        }
    }

    @Test func thousandPipelinedRequestsEachAnsweredOnce() async throws {
        try await LiveServer.with(extraPlugins: [ProbePlugin()]) { server in
            let raw = try await RawLineClient.connect(port: server.port)
            defer { Task { await raw.close() } }
            var payload = ""
            for id in 0..<1000 {
                // Odd ids sleep a little so answers come back out of order.
                let method = id % 2 == 0 ? "system.ping" : "probe.sleep"
                let params = id % 2 == 0 ? "" : #","params":{"milliseconds":\#(id % 7),"tag":\#(id)}"#
                payload += #"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)"\#(params)}"# + "\n"
            }
            try await raw.send(payload)
            var seen = Set<Int64>()
            var outOfOrder = false
            var last: Int64 = -1
            for _ in 0..<1000 {
                let reply = try Self.response(await raw.readLine())
                let id = try #require(reply["id"]?.intValue)
                #expect(seen.insert(id).inserted, "id \(id) answered twice")
                if id < last { outOfOrder = true }
                last = id
                if id % 2 == 1 { #expect(reply["result"]?.intValue == id) }
            }
            #expect(seen.count == 1000)
            #expect(outOfOrder, "slow calls should not hold back fast ones")
        }
    }

    @Test func oversizeLineAnswersAndCloses() async throws {
        try await LiveServer.with(rpc: { $0.maxLineBytes = 4096 }) { server in
            let raw = try await RawLineClient.connect(port: server.port)
            try await raw.send(String(repeating: "x", count: 10_000))
            let reply = try Self.response(await raw.readLine())
            #expect(reply["error"]?["code"] == -32600)
            #expect(await raw.waitForClose())
        }
    }

    @Test func defaultLimitIsOneMebibyte() async throws {
        try await LiveServer.with { server in
            let raw = try await RawLineClient.connect(port: server.port)
            let big = #"{"jsonrpc":"2.0","id":1,"method":"system.ping","params":{"pad":""# + String(repeating: "a", count: 1 << 20) + "\"}}\n"
            try await raw.send(big)
            let reply = try Self.response(await raw.readLine())
            #expect(reply["error"]?["code"] == -32600)
            #expect(await raw.waitForClose())
        }
    }

    @Test func clientThatDisconnectsMidRequestDoesNotHurtOthers() async throws {
        try await LiveServer.with(extraPlugins: [ProbePlugin()]) { server in
            let leaving = try await RawLineClient.connect(port: server.port)
            try await leaving.send(#"{"jsonrpc":"2.0","id":1,"method":"probe.sleep","params":{"milliseconds":300}}"# + "\n")
            try await leaving.send(#"{"jsonrpc":"2.0","id":2,"method":"probe.sleep","params":"#)  // half a line
            await leaving.close()
            let client = try await AerieClient.connect(host: "127.0.0.1", port: server.port)
            try await Task.sleep(for: .milliseconds(400))
            #expect(try await client.call("system.ping") == "pong")
            await client.close()
        }
    }

    @Test func manyConcurrentSessions() async throws {
        try await LiveServer.with { server in
            let port = server.port
            let results = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<200 {
                    group.addTask {
                        let client = try await AerieClient.connect(host: "127.0.0.1", port: port)
                        defer { Task { await client.close() } }
                        for _ in 0..<5 { guard try await client.call("system.ping") == "pong" else { return false } }
                        return true
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(results.count == 200)
            #expect(results.allSatisfy { $0 })
        }
    }

    @Test func idleSessionIsClosed() async throws {
        try await LiveServer.with(rpc: { $0.idleTimeoutSeconds = 1 }) { server in
            let raw = try await RawLineClient.connect(port: server.port)
            let started = ContinuousClock.now
            #expect(await raw.waitForClose())
            #expect(ContinuousClock.now - started < .seconds(10))
        }
    }

    @Test func discoverListsTheRouter() async throws {
        try await LiveServer.with { server in
            let client = try await AerieClient.connect(host: "127.0.0.1", port: server.port)
            defer { Task { await client.close() } }
            let doc = try await client.call("rpc.discover")
            #expect(doc["openrpc"]?.stringValue?.hasPrefix("1.") == true)
            guard case .array(let methods)? = doc["methods"] else {
                Issue.record("no methods")
                return
            }
            let names = Set(methods.compactMap { $0["name"]?.stringValue })
            for expected in ["system.ping", "system.version", "session.authenticate", "admin.tenants.create", "settings.get"] {
                #expect(names.contains(expected), "\(expected) missing from rpc.discover")
            }
        }
    }
}
