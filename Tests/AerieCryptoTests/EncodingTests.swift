import Testing

@testable import AerieCrypto

struct EncodingTests {
    /// RFC 4648 §10.
    @Test func base64RFC4648Vectors() throws {
        let vectors = [
            ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in vectors {
            #expect(Base64.encode(Array(plain.utf8)) == encoded)
            #expect(Base64.encode(Array(plain.utf8), padding: false) == encoded.replacingOccurrences(of: "=", with: ""))
            #expect(try Base64.decode(encoded) == Array(plain.utf8))
            #expect(try Base64.decode(encoded.replacingOccurrences(of: "=", with: "")) == Array(plain.utf8))
        }
    }

    @Test func base64URLAlphabetAndTolerance() throws {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF, 0xFE]
        #expect(Base64.encode(bytes) == "+/+//g==")
        #expect(Base64.encodeURL(bytes) == "-_-__g")
        #expect(Base64.encodeURL(bytes, padding: true) == "-_-__g==")
        for text in ["+/+//g==", "+/+//g", "-_-__g", "-_-__g=="] {
            #expect(try Base64.decode(text) == bytes)
        }
        let all = (0...255).map { UInt8($0) }
        #expect(try Base64.decode(Base64.encodeURL(all)) == all)
        #expect(try Base64.decode(Base64.encode(all)) == all)
    }

    @Test(arguments: ["Zm9v!", "Z", "Zm9vY", "Zg===", "Zg=", "Zm 9v", "Zm9v\n", "é"])
    func base64RejectsGarbage(text: String) {
        #expect(throws: CryptoError.self) { try Base64.decode(text) }
    }

    /// Vectors from the base58 (Bitcoin alphabet) draft and Bitcoin Core's base58_encode_decode.json.
    @Test func base58Vectors() throws {
        let vectors: [(hex: String, b58: String)] = [
            ("", ""),
            ("61", "2g"),
            ("626262", "a3gV"),
            ("636363", "aPEr"),
            ("73696d706c792061206c6f6e6720737472696e67", "2cFupjhnEsSn59qHXstmK2ffpLv2"),
            ("00eb15231dfceb60925886b67d065299925915aeb172c06647", "1NS17iag9jJgTHD1VXjvLCEnZuQ3rJDE9L"),
            ("516b6fcd0f", "ABnLTmg"),
            ("bf4f89001e670274dd", "3SEo3LWLoPntC"),
            ("572e4794", "3EFU7m"),
            ("ecac89cad93923c02321", "EJDM8drfXA6uyA"),
            ("10c8511e", "Rt5zm"),
            ("00000000000000000000", "1111111111"),
            ("48656c6c6f20576f726c6421", "2NEpo7TZRRrLZSi2U"),
        ]
        for v in vectors {
            let bytes = try Hex.decode(v.hex)
            #expect(Base58.encode(bytes) == v.b58)
            #expect(try Base58.decode(v.b58) == bytes)
        }
        #expect(throws: CryptoError.self) { try Base58.decode("0OIl") }
        #expect(throws: CryptoError.self) { try Base58.decode("abc!") }
        let random = Random.bytes(64)
        #expect(try Base58.decode(Base58.encode(random)) == random)
    }

    @Test func hex() throws {
        #expect(Hex.encode([0, 0xAB, 0xFF]) == "00abff")
        #expect(try Hex.decode("00ABff") == [0, 0xAB, 0xFF])
        #expect(throws: CryptoError.self) { try Hex.decode("abc") }
        #expect(throws: CryptoError.self) { try Hex.decode("zz") }
    }
}
