import AerieCore
import AerieCrypto
@testable import AerieServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where inbound bodies are parsed (`InboundParsing`): up to `inlineLimit` bytes in the task that
/// asks, beyond it on the one parsing thread, whatever the body holds.
@Suite(.timeLimit(.minutes(5))) struct InboundParsingTests {
    /// The thread a parse ran on, seen from inside it.
    static func thread() -> pthread_t { pthread_self() }

    @Test func smallBodiesAreParsedInPlaceAndBigOnesOnTheParsingThread() async throws {
        let parsing = InboundParsing()
        // In place: the closure runs on the caller's thread, synchronously.
        for count in [0, 1, 1500, InboundParsing.inlineLimit] {
            let (caller, parser) = try await parsing.parse(count) { (Self.thread(), Self.thread()) }
            #expect(pthread_equal(caller, parser) != 0, "\(count) bytes")
        }
        // Past the limit: on the parsing thread, the same one every time, never the caller's.
        let first = try await parsing.parse(InboundParsing.inlineLimit + 1) { Self.thread() }
        for count in [InboundParsing.inlineLimit + 1, 1 << 20] {
            let caller = Self.thread()
            let parser = try await parsing.parse(count) { Self.thread() }
            #expect(pthread_equal(parser, first) != 0, "\(count) bytes")
            #expect(pthread_equal(parser, caller) == 0, "\(count) bytes")
        }
    }

    /// Errors come back from either place as they were thrown.
    @Test func parseErrorsReachTheCaller() async throws {
        let parsing = InboundParsing()
        for count in [10, InboundParsing.inlineLimit + 1] {
            let body = Array(repeating: UInt8(ascii: "["), count: count)
            await #expect(throws: CryptoError.self) { try await parsing.parse(body.count) { try DIDCommEnvelope(parsing: body) } }
        }
    }
}
