import Testing

@testable import AerieCrypto

@Suite(.timeLimit(.minutes(5))) struct EncodingTests {
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

    /// `Base58` works in limbs of several digits; a digit-at-a-time conversion (the textbook
    /// one) must agree with it on every length, leading zeros and all, both ways.
    @Test func base58AgreesWithDigitAtATime() throws {
        let alphabet = Array("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz".utf8)
        func reference(_ input: [UInt8]) -> String {
            var number = Array(input.drop { $0 == 0 })  // big-endian base 256
            var digits: [UInt8] = []
            while !number.isEmpty {
                var remainder = 0
                var quotient: [UInt8] = []
                for byte in number {
                    let value = remainder * 256 + Int(byte)
                    let q = value / 58
                    remainder = value % 58
                    if !quotient.isEmpty || q != 0 { quotient.append(UInt8(q)) }
                }
                digits.append(alphabet[remainder])
                number = quotient
            }
            let zeros = input.prefix { $0 == 0 }.count
            return String(decoding: [UInt8](repeating: alphabet[0], count: zeros) + digits.reversed(), as: UTF8.self)
        }
        for length in 0...70 {
            for zeros in [0, 1, 3] where zeros <= length {
                var bytes = Random.bytes(length)
                for i in 0..<zeros { bytes[i] = 0 }
                if zeros < length, bytes[zeros] == 0 { bytes[zeros] = 1 }
                let text = reference(bytes)
                #expect(Base58.encode(bytes) == text, "length \(length), zeros \(zeros)")
                #expect(try Base58.decode(text) == bytes, "length \(length), zeros \(zeros)")
            }
        }
        for bytes in [[UInt8](repeating: 0xFF, count: 32), [UInt8](repeating: 0, count: 32), [0, 0, 0xFF], [1, 0, 0, 0, 0]] {
            #expect(Base58.encode(bytes) == reference(bytes))
            #expect(try Base58.decode(reference(bytes)) == bytes)
        }
        // A '1' after the first other digit is a zero digit, not a leading zero byte.
        #expect(try Base58.decode("21111") == [0xAC, 0xAD, 0x10])  // 58^4
        #expect(Base58.encode(try Base58.decode("z1z11")) == "z1z11")
        #expect(throws: CryptoError.self) { try Base58.decode("11112abc0") }
    }

    @Test func hex() throws {
        #expect(Hex.encode([0, 0xAB, 0xFF]) == "00abff")
        #expect(try Hex.decode("00ABff") == [0, 0xAB, 0xFF])
        #expect(throws: CryptoError.self) { try Hex.decode("abc") }
        #expect(throws: CryptoError.self) { try Hex.decode("zz") }
    }
}
