import NIOCore
import NIOEmbedded
import AerieCore
import Testing

@testable import AerieRPC

@Suite(.timeLimit(.minutes(10))) struct LineFrameDecoderTests {
    func decode(_ chunks: [String], max: Int = 16) throws -> [String] {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(LineFrameDecoder(maxLength: max)))
        for chunk in chunks { try channel.writeInbound(channel.allocator.buffer(string: chunk)) }
        var out: [String] = []
        while let frame = try channel.readInbound(as: LineFrame.self) {
            switch frame {
            case .line(let buffer): out.append(String(buffer: buffer))
            case .oversize: out.append("<oversize>")
            }
        }
        _ = try? channel.finish()
        return out
    }

    @Test func splitsLinesAcrossChunksAndDropsCR() throws {
        #expect(try decode(["ab", "c\r\nde", "f\n\n"]) == ["abc", "def", ""])
    }

    @Test func refusesAnOversizeLineWithoutItsNewline() throws {
        // 17 bytes with no newline yet: reported before the rest arrives.
        #expect(try decode([String(repeating: "x", count: 17)]) == ["<oversize>"])
    }

    @Test func refusesAnOversizeLineThatHasItsNewline() throws {
        #expect(try decode(["ok\n" + String(repeating: "y", count: 20) + "\nmore\n"]) == ["ok", "<oversize>"])
    }

    @Test func exactlyTheLimitIsAccepted() throws {
        let line = String(repeating: "z", count: 16)
        #expect(try decode([line + "\n"]) == [line])
    }
}

@Suite(.timeLimit(.minutes(10))) struct RPCEnvelopeTests {
    func parse(_ text: String) -> RPCIncoming { RPCEnvelope.parse(Array(text.utf8), maxBatchEntries: 3) }

    @Test func validRequestAndNotification() {
        guard case .single(.success(let request)) = parse(#"{"jsonrpc":"2.0","id":"a","method":"m","params":{"x":1}}"#) else {
            Issue.record("not a request")
            return
        }
        #expect(request.id == "a")
        #expect(request.method == "m")
        guard case .single(.success(let notification)) = parse(#"{"jsonrpc":"2.0","method":"m"}"#) else {
            Issue.record("not a notification")
            return
        }
        #expect(notification.id == nil)
    }

    @Test func invalidRequestsKeepTheirIdWhenReadable() {
        for (text, expectedID) in [
            (#"{"jsonrpc":"2.0","id":5}"#, JSONValue.int(5)),
            (#"{"id":6,"method":"m"}"#, .int(6)),
            (#"{"jsonrpc":"2.0","id":{"x":1},"method":"m"}"#, .null),
            (#"{"jsonrpc":"2.0","id":7,"method":"m","params":3}"#, .int(7)),
            (#"{"jsonrpc":"2.0","id":8,"method":""}"#, .int(8)),
            ("42", .null),
        ] {
            guard case .single(.failure(let invalid)) = parse(text) else {
                Issue.record("\(text) should be invalid")
                continue
            }
            #expect(invalid.id == expectedID, "\(text)")
        }
    }

    @Test func batches() {
        guard case .invalidBatch = parse("[]") else { Issue.record("empty batch"); return }
        guard case .invalidBatch = parse("[1,2,3,4]") else { Issue.record("over the batch limit"); return }
        guard case .batch(let entries) = parse(#"[{"jsonrpc":"2.0","id":1,"method":"m"},1]"#) else {
            Issue.record("batch")
            return
        }
        #expect(entries.count == 2)
    }

    @Test func parseErrors() {
        for text in ["", "{", #"{"a":1} x"#, "[1,]", #"{"a":tru}"#, String(repeating: "[", count: 100) + String(repeating: "]", count: 100)] {
            guard case .parseError = parse(text) else {
                Issue.record("\(text.prefix(20)) should not parse")
                continue
            }
        }
    }

    @Test func errorResponsesCarryTheStableCode() {
        let response = RPCEnvelope.error(id: 3, AerieError.invalidParams("x is required", field: "x"))
        #expect(response["error"]?["code"] == -32602)
        #expect(response["error"]?["data"]?["field"] == "x")
        #expect(response["error"]?["data"]?["code"] == "invalid_params")
    }
}
