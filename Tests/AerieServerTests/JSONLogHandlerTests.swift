import AerieCore
import Foundation
import Logging
import Synchronization
import Testing

@testable import AerieServer

/// `AERIE_LOG_FORMAT=json`: every line one JSON object with the fixed members and the metadata.
@Suite(.timeLimit(.minutes(10))) struct JSONLogHandlerTests {
    final class Lines: Sendable {
        let lines = Mutex<[[UInt8]]>([])
        func append(_ line: [UInt8]) { lines.withLock { $0.append(line) } }
        var all: [[UInt8]] { lines.withLock { $0 } }
    }

    @Test func eachEventIsOneJSONObjectLine() throws {
        let sink = Lines()
        var logger = Logger(label: "aerie") { label in JSONLogHandler(label: label, write: { sink.append($0) }) }
        logger[metadataKey: "request"] = "00ff00ff00ff00ff"
        logger.info("inbound message refused", metadata: ["status": "400", "message": "collides", "list": ["a", "b"]])
        logger.debug("below the level: not written")
        logger.warning("quote \" and newline \n inside")

        let lines = sink.all
        #expect(lines.count == 2)
        for line in lines {
            #expect(line.last == UInt8(ascii: "\n"))
            #expect(line.dropLast().contains(UInt8(ascii: "\n")) == false, "one line per event")
        }
        guard case .object(let first)? = try? JSONValue(parsing: Array(lines[0].dropLast())) else {
            Issue.record("not a JSON object")
            return
        }
        #expect(first["level"]?.stringValue == "info")
        #expect(first["label"]?.stringValue == "aerie")
        #expect(first["message"]?.stringValue == "inbound message refused")
        #expect(first["request"]?.stringValue == "00ff00ff00ff00ff")
        #expect(first["status"]?.stringValue == "400")
        #expect(first["meta.message"]?.stringValue == "collides")
        #expect(first["list"] == .array([.string("a"), .string("b")]))
        let time = try #require(first["time"]?.stringValue)
        #expect(time.count == 24 && time.hasSuffix("Z") && time.dropFirst(10).first == "T", "\(time)")
        guard case .object(let second)? = try? JSONValue(parsing: Array(lines[1].dropLast())) else {
            Issue.record("not a JSON object")
            return
        }
        #expect(second["message"]?.stringValue == "quote \" and newline \n inside")
    }

    @Test func timestampsAreUTCWithMilliseconds() {
        #expect(JSONLogHandler.timestamp(Date(timeIntervalSince1970: 0.25)) == "1970-01-01T00:00:00.250Z")
        #expect(JSONLogHandler.timestamp(Date(timeIntervalSince1970: 1_795_000_000.007)).hasSuffix(".007Z"))
    }
}

/// `AERIE_LOG_FORMAT=text`: swift-log's stream handler, given the metadata only when it writes a
/// line (`TextLogHandler`).
@Suite(.timeLimit(.minutes(10))) struct TextLogHandlerTests {
    final class Stream: TextOutputStream, @unchecked Sendable {
        let text = Mutex<String>("")
        func write(_ string: String) { text.withLock { $0 += string } }
    }

    @Test func metadataSetInAnyWayIsWrittenWithTheLine() {
        let stream = Stream()
        var logger = Logger(label: "aerie") { label in TextLogHandler(StreamLogHandler(label: label, stream: stream)) }
        logger.logLevel = .info
        logger[metadataKey: "request"] = "00ff00ff00ff00ff"
        logger.handler.metadata["session"] = "7"
        var copy = logger
        copy[metadataKey: "tenant"] = "t1"
        logger.debug("not written")
        copy.info("handled", metadata: ["status": "202"])
        logger.warning("refused")
        let lines = stream.text.withLock { $0 }.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines[0].contains("handled") && lines[0].contains("request=00ff00ff00ff00ff") && lines[0].contains("session=7"))
        #expect(lines[0].contains("tenant=t1") && lines[0].contains("status=202"))
        // A copy's metadata is its own (value semantics).
        #expect(lines[1].contains("refused") && lines[1].contains("session=7") && !lines[1].contains("tenant"))
        #expect(logger[metadataKey: "request"] == "00ff00ff00ff00ff")
    }
}
