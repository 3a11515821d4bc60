import AerieCore
import ConnectionsPlugin
import CLibFuzzer
#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer target: an invitation URL (`c_i`, `oob`, `d_m`; base64 or base64url, padded or
/// not, percent-encoded or not), then the invitation it carries.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzInvitationURL(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let data else { return 0 }
    let url = String(decoding: UnsafeBufferPointer(start: data, count: count), as: UTF8.self)
    _ = InvitationURL.hasInvitationParameter(url)
    guard let json = (try? InvitationURL.embeddedInvitation(in: url)) ?? nil else { return 0 }
    _ = try? InvitationParser.parse(json)
    return 0
}

@main
enum FuzzInvitationURLMain {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzInvitationURL($0, $1) })
    }
}
