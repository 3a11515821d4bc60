import AerieCrypto
import CLibFuzzer
#if canImport(Glibc)
import Glibc
#endif

/// The recipient of the seed corpus' Credo 0.5 vectors (EnvelopeTests), so mutations of them
/// reach decryption.
private let recipient = try! Ed25519KeyPair(
    seed: Hex.decode("226e10dad834f65c4e2b4bed1c29db06908f225eaa27ca7ebe2b74258fd6f1eb"))

/// libFuzzer target: a DIDComm v1 envelope as the inbound endpoint parses it before anything
/// is authenticated, then an attempt to open it with a fixed key (and a `forward` inside).
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzEnvelope(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    guard let envelope = try? DIDCommEnvelope(parsing: bytes) else { return 0 }
    precondition(envelope.recipientKids.count <= DIDCommEnvelope.Limits.maxRecipients)
    precondition(envelope.recipientKids.allSatisfy { $0.utf8.count <= DIDCommEnvelope.Limits.maxKidLength })
    guard envelope.recipientKids.contains(recipient.verkeyBase58), let opened = try? envelope.open(with: recipient) else {
        return 0
    }
    _ = try? Forward.unwrap(opened.plaintext)
    return 0
}

@main
enum FuzzEnvelopeMain {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzEnvelope($0, $1) })
    }
}
