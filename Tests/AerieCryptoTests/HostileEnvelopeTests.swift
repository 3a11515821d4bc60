import Foundation
import Testing

@testable import AerieCrypto

/// Envelopes written by an attacker: every size and count is refused before it is decoded, with
/// `malformed_envelope`, and the work stays linear in the input.
@Suite(.timeLimit(.minutes(5))) struct HostileEnvelopeTests {
    static let bob = try! Ed25519KeyPair(seed: Array("aerie-test-bob-00000000000000000".utf8))

    /// A well-formed envelope (anoncrypt to `kids`) with recipients written by hand.
    static func envelope(kids: [String], protectedPadding: Int = 0) -> [UInt8] {
        let entries = kids.map { #"{"encrypted_key":"AAAA","header":{"kid":"\#($0)"}}"# }
        let pad = protectedPadding > 0 ? #","pad":""# + String(repeating: "x", count: protectedPadding) + #"""# : ""
        let header = #"{"enc":"xchacha20poly1305_ietf","typ":"JWM/1.0","alg":"Anoncrypt","recipients":["#
            + entries.joined(separator: ",") + "]" + pad + "}"
        return Array(
            #"{"protected":"\#(Base64.encodeURL(Array(header.utf8)))","iv":"AAAAAAAAAAAAAAAA","ciphertext":"AAAA","tag":"AAAAAAAAAAAAAAAAAAAAAA"}"#
                .utf8)
    }

    static func expectMalformed(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        let started = ContinuousClock.now
        do {
            _ = try DIDCommEnvelope(parsing: bytes)
            Issue.record("a hostile envelope parsed", sourceLocation: sourceLocation)
        } catch let error as CryptoError {
            #expect(error.code == .malformedEnvelope, sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        }
        // Loose on purpose (a loaded CI box): quadratic decoding of these took tens of seconds.
        #expect(ContinuousClock.now - started < .seconds(5), sourceLocation: sourceLocation)
    }

    @Test func hugeKidIsRefusedBeforeDecoding() {
        Self.expectMalformed(Self.envelope(kids: [String(repeating: "z", count: 300_000)]))
        Self.expectMalformed(Self.envelope(kids: [String(repeating: "1", count: 45)]))
    }

    @Test func longestVerkeyKidStillParses() throws {
        let kid = String(repeating: "z", count: Base58.maxVerkeyLength)
        let parsed = try DIDCommEnvelope(parsing: Self.envelope(kids: [kid]))
        #expect(parsed.recipientKids == [kid])
    }

    @Test func recipientCountIsCapped() throws {
        let kids = (0..<DIDCommEnvelope.Limits.maxRecipients).map { "kid\($0)" }
        #expect(try DIDCommEnvelope(parsing: Self.envelope(kids: kids)).recipientKids.count == kids.count)
        Self.expectMalformed(Self.envelope(kids: kids + ["one-more"]))
        Self.expectMalformed(Self.envelope(kids: (0..<50_000).map { "k\($0)" }))
    }

    @Test func protectedHeaderSizeIsCapped() {
        Self.expectMalformed(Self.envelope(kids: ["a"], protectedPadding: DIDCommEnvelope.Limits.maxProtectedLength))
    }

    @Test func oversizeFieldsAreRefused() {
        let big = String(repeating: "A", count: 600_000)
        for (field, value) in [("iv", big), ("tag", big), ("iv", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")] {
            var object = try! JSONSerialization.jsonObject(with: Data(Self.envelope(kids: ["a"]))) as! [String: Any]
            object[field] = value
            Self.expectMalformed(Array(try! JSONSerialization.data(withJSONObject: object)))
        }
        let longKey = String(repeating: "A", count: 200_000)
        let header = #"{"enc":"xchacha20poly1305_ietf","alg":"Anoncrypt","recipients":[{"encrypted_key":"\#(longKey)","header":{"kid":"a"}}]}"#
        let protected = Base64.encodeURL(Array(header.utf8))
        Self.expectMalformed(Array(#"{"protected":"\#(protected)","iv":"AAAAAAAAAAAAAAAA","ciphertext":"","tag":"AAAAAAAAAAAAAAAAAAAAAA"}"#.utf8))
    }

    /// 1 MiB bodies of every awkward shape: each is refused with `malformed_envelope`.
    @Test(arguments: HostileEnvelopes.all.filter { !$0.wellFormed }.map(\.name))
    func oneMebibyteBodies(name: String) {
        let body = HostileEnvelopes.all.first { $0.name == name }!.bytes
        #expect(body.count >= 1 << 18 && body.count <= 1 << 20)
        Self.expectMalformed(body)
    }

    @Test func wellFormedHostileBodyParsesQuickly() throws {
        for body in HostileEnvelopes.all where body.wellFormed {
            let started = ContinuousClock.now
            #expect(try DIDCommEnvelope(parsing: body.bytes).recipientKids.count == 1)
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }

    @Test func base58AndKeyReferencesAreBounded() throws {
        let long = String(repeating: "2", count: 300_000)
        #expect(throws: CryptoError.self) { try Base58.decode(long) }
        #expect((try? Base58.decode(String(repeating: "2", count: Base58.maxDecodeLength))) != nil)
        #expect(throws: CryptoError.self) { try KeyReference.verkey(from: long) }
        #expect(throws: CryptoError.self) { try KeyReference.verkey(from: "did:key:z" + long) }
        #expect(throws: CryptoError.self) { try PeerDID2("did:peer:2.Vz" + long) }
        #expect(try KeyReference.verkeyBase58(from: Self.bob.verkeyBase58) == Self.bob.verkeyBase58)
    }

    @Test func realEnvelopesToManyRecipientsStillOpen() throws {
        var keys = (1..<DIDCommEnvelope.Limits.maxRecipients).map { _ in Ed25519KeyPair.generate() }
        keys.append(Self.bob)
        let packed = try DIDCommEnvelope.pack(
            Array(#"{"@type":"x","@id":"1"}"#.utf8), to: keys.map(\.verkeyBase58), from: Ed25519KeyPair.generate())
        let unpacked = try DIDCommEnvelope.unpack(packed) { kids in kids.contains(Self.bob.verkeyBase58) ? Self.bob : nil }
        #expect(unpacked.recipientVerkey == Self.bob.verkeyBase58)
    }
}
