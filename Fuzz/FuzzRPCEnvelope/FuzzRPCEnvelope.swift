import AerieCore
import CLibFuzzer
#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer target: one JSON-RPC 2.0 request line as `RPCServer` reads it (JSON parse, then
/// request/batch validation), and the error response built for an invalid one. `RPCEnvelope.swift`
/// is compiled in from Sources/AerieRPC (a symlink), so this build needs no SwiftNIO.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzRPCEnvelope(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let data else { return 0 }
    let bytes = UnsafeBufferPointer(start: data, count: count)
    switch RPCEnvelope.parse(bytes, maxBatchEntries: 100) {
    case .single(let entry):
        check(entry)
    case .batch(let entries):
        precondition(!entries.isEmpty && entries.count <= 100)
        entries.forEach(check)
    case .parseError(let reason):
        _ = RPCEnvelope.error(id: .null, AerieError(.parseError, reason)).serialized()
    case .invalidBatch(let reason):
        _ = RPCEnvelope.error(id: .null, AerieError(.invalidRequest, reason)).serialized()
    }
    return 0
}

private func check(_ entry: Result<RPCRequest, RPCInvalidRequest>) {
    switch entry {
    case .success(let request):
        precondition(!request.method.isEmpty)
        _ = request.params?.pathOfNulCharacter()
    case .failure(let invalid):
        _ = RPCEnvelope.error(id: invalid.id, AerieError(.invalidRequest, invalid.message)).serialized()
    }
}

@main
enum FuzzRPCEnvelopeMain {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzRPCEnvelope($0, $1) })
    }
}
