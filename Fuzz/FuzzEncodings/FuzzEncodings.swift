import AerieCrypto
import CLibFuzzer
#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer target: base58 and base64 decoders (round trip through the encoders) and the key
/// references built on them (raw verkeys, did:key, did:peer:2).
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzEncodings(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    let text = String(decoding: bytes, as: UTF8.self)
    if let decoded = try? Base58.decode(text) {
        precondition(text.utf8.count <= Base58.maxDecodeLength)
        precondition((try? Base58.decode(Base58.encode(decoded))) == decoded, "base58 round trip")
    }
    if let decoded = try? Base64.decode(text) {
        precondition((try? Base64.decode(Base64.encode(decoded))) == decoded, "base64 round trip")
        precondition((try? Base64.decode(Base64.encodeURL(decoded))) == decoded, "base64url round trip")
    }
    precondition((try? Base64.decode(Base64.encode(bytes))) == bytes, "base64 of arbitrary bytes")
    if bytes.count <= 64 {
        precondition((try? Base58.decode(Base58.encode(bytes))) == bytes, "base58 of arbitrary bytes")
    }
    if let verkey = try? KeyReference.verkey(from: text) { precondition(verkey.count == 32) }
    _ = try? PeerDID2(text)
    return 0
}

@main
enum FuzzEncodingsMain {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzEncodings($0, $1) })
    }
}
