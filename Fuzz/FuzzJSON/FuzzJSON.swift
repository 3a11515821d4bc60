import AerieCore
import CLibFuzzer
#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer target: the strict JSON parser, its serializer (a parsed value serializes to text
/// that parses back to the same value) and the U+0000 check of JSON-RPC params.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzJSON(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let data else { return 0 }
    let bytes = UnsafeBufferPointer(start: data, count: count)
    guard let value = try? JSONValue(parsing: bytes) else { return 0 }
    _ = value.pathOfNulCharacter()
    let text = value.serialized()
    guard let again = try? JSONValue(parsing: text) else { fatalError("serialized JSON does not parse: \(text)") }
    if again.serialized() != text { fatalError("serialization is not stable") }
    _ = try? JSONValue(parsing: bytes, maxValues: 32)
    return 0
}

@main
enum FuzzJSONMain {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzJSON($0, $1) })
    }
}
