/// Bodies an unauthenticated attacker may POST to the DIDComm endpoint, each about 1 MiB (the
/// body limit), for the tests, `aerie-bench hostile` and the fuzz seed corpus, and the same kinds
/// at any size (`bodies(size:label:)`: at 16 KiB, those the server parses in place). Every one of
/// them must be refused quickly; only `unknownRecipient` is a well-formed envelope.
public enum HostileEnvelopes {
    public struct Body: Sendable {
        public let name: String
        public let bytes: [UInt8]
        /// Whether `DIDCommEnvelope(parsing:)` accepts it (it is then refused for its recipient).
        public let wellFormed: Bool
    }

    /// About 1 MiB, leaving room for the JSON around the filler.
    public static let size = (1 << 20) - 256

    public static let all: [Body] =
        [Body(name: "kid-300k", bytes: anoncrypt(kids: [String(repeating: "z", count: 300_000)]), wellFormed: false)]
        + bodies(size: size, label: "1MiB")

    /// Each kind of body at most `size` bytes (at least 1 KiB); `label` ends the names of the
    /// kinds named by their size.
    public static func bodies(size: Int, label: String) -> [Body] {
        let size = max(size, 1024)
        return [
            Body(name: "kid-\(label)", bytes: anoncrypt(kids: [String(repeating: "z", count: size * 3 / 4 - 200)]), wellFormed: false),
            Body(name: "random-bytes", bytes: randomBytes(size), wellFormed: false),
            Body(name: "deep-nesting", bytes: Array(repeating: UInt8(ascii: "["), count: size), wellFormed: false),
            Body(name: "number-array", bytes: repeated(size, prefix: "[", item: "1,", last: "1]"), wellFormed: false),
            Body(name: "many-members", bytes: manyMembers(size), wellFormed: false),
            Body(name: "escaped-string", bytes: repeated(size, prefix: #"{"protected":""#, item: #"\u0041"#, last: #""}"#), wellFormed: false),
            Body(name: "many-recipients", bytes: anoncrypt(kids: (0..<(size / 80)).map { "k\($0)" }), wellFormed: false),
            Body(name: "unprotected-recipients", bytes: unprotectedRecipients(size), wellFormed: false),
            Body(name: "bad-base64-ciphertext", bytes: anoncrypt(kids: ["a"], ciphertext: String(repeating: "!", count: size - 400)), wellFormed: false),
            Body(
                name: "unknown-recipient-\(label)",
                bytes: anoncrypt(kids: [Base58.encode(Random.bytes(32))], ciphertext: String(repeating: "A", count: size - 400)), wellFormed: true),
        ]
    }

    /// An anoncrypt-shaped envelope to `kids` (nothing in it decrypts).
    public static func anoncrypt(kids: [String], ciphertext: String = "AAAA") -> [UInt8] {
        var header = Array(#"{"enc":"xchacha20poly1305_ietf","typ":"JWM/1.0","alg":"Anoncrypt","recipients":["#.utf8)
        for (index, kid) in kids.enumerated() {
            if index > 0 { header.append(UInt8(ascii: ",")) }
            header.append(contentsOf: #"{"encrypted_key":"AAAA","header":{"kid":""#.utf8)
            header.append(contentsOf: kid.utf8)
            header.append(contentsOf: #""}}"#.utf8)
        }
        header.append(contentsOf: "]}".utf8)
        return Array(
            #"{"protected":"\#(Base64.encodeURL(header))","iv":"AAAAAAAAAAAAAAAA","ciphertext":"\#(ciphertext)","tag":"AAAAAAAAAAAAAAAAAAAAAA"}"#
                .utf8)
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var out = Random.bytes(count)
        out[0] = UInt8(ascii: "{")
        return out
    }

    static func repeated(_ size: Int, prefix: String, item: String, last: String) -> [UInt8] {
        var out = Array(prefix.utf8)
        let itemBytes = Array(item.utf8)
        while out.count + itemBytes.count + last.utf8.count <= size { out.append(contentsOf: itemBytes) }
        out.append(contentsOf: last.utf8)
        return out
    }

    static func manyMembers(_ size: Int) -> [UInt8] {
        var out = Array("{".utf8)
        var index = 0
        while out.count < size - 32 {
            out.append(contentsOf: #""m\#(index)":0,"#.utf8)
            index += 1
        }
        out.append(contentsOf: #""end":0}"#.utf8)
        return out
    }

    static func unprotectedRecipients(_ size: Int) -> [UInt8] {
        let header = Base64.encodeURL(Array(#"{"enc":"xchacha20poly1305_ietf","alg":"Anoncrypt"}"#.utf8))
        var out = Array(#"{"protected":"\#(header)","iv":"AAAAAAAAAAAAAAAA","ciphertext":"AAAA","tag":"AAAAAAAAAAAAAAAAAAAAAA","recipients":["#.utf8)
        var first = true
        while out.count < size - 64 {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out.append(contentsOf: #"{"encrypted_key":"AAAA","header":{"kid":"k"}}"#.utf8)
        }
        out.append(contentsOf: "]}".utf8)
        return out
    }
}
