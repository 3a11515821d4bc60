import AerieCore
import ConnectionsPlugin
import CLibFuzzer
#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer target: an invitation as JSON text (every kind the seeds show) and the duplicate
/// match keys of what parses.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzInvitation(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let data else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: data, count: count), as: UTF8.self)
    guard let invitation = try? InvitationParser.parse(text: text) else { return 0 }
    _ = InvitationMatchKeys(invitation)
    return 0
}

@main
enum FuzzInvitationMain {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzInvitation($0, $1) })
    }
}
