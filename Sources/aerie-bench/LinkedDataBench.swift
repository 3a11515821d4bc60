import AerieCore
import AerieCrypto
import AerieTesting
import Foundation

/// `aerie-bench ldp`: Ed25519Signature2018 sign and verify of one credential (credentials v1 with
/// the citizenship context, the interop harness's shape) per second, and ACA-Py 1.2.7's own
/// `vc.ld_proofs` doing the same work in the same run (Tests/Interop/acapy_ldp.py `bench`) as
/// the anchor. One thread each.
func runLinkedDataBench(seconds: Double) throws -> String {
    let credential = try JSONValue(
        parsing: #"""
            {"@context": ["https://www.w3.org/2018/credentials/v1", "https://w3id.org/citizenship/v1"],
             "type": ["VerifiableCredential", "PermanentResident"], "id": "https://credential.example.com/residents/1234567890",
             "issuer": "did:key:z6Mkgb2uPmSVfKWxaGrsDrLS4DUVU9nkfdPB7tqaLMG5GM8C", "issuanceDate": "2020-01-01T12:00:00Z",
             "credentialSubject": {"type": ["PermanentResident"], "givenName": "ALICE", "familyName": "SMITH",
               "gender": "Female", "birthCountry": "Bahamas", "birthDate": "1958-07-17"}}
            """#)
    let seed = "aerie-ldp-issuer-000000000000000"
    let key = try Ed25519KeyPair(seed: Array(seed.utf8))
    let method = try DIDKey.keyReference(verkey: key.verkey)
    func signOnce() throws -> JSONValue {
        try LinkedDataProofs.sign(
            credential, suite: .ed25519Signature2018, key: key, verificationMethod: method, purpose: .assertionMethod,
            created: Date())
    }
    let signed = try signOnce()
    _ = try LinkedDataProofs.verify(signed, purpose: .assertionMethod)

    let clock = ContinuousClock()
    func rate(_ body: () throws -> Void) rethrows -> Double {
        var count = 0
        let start = clock.now
        while clock.now - start < .seconds(seconds) {
            try body()
            count += 1
        }
        let elapsed = clock.now - start
        return Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
    let signRate = try rate { _ = try signOnce() }
    let verifyRate = try rate { _ = try LinkedDataProofs.verify(signed, purpose: .assertionMethod) }

    let acapy = try acapyLinkedDataBench(credential: credential, seed: seed, seconds: seconds)
    let acapySign = acapy["sign_per_second"] as? Double ?? .nan
    let acapyVerify = acapy["verify_per_second"] as? Double ?? .nan
    func f(_ value: Double) -> String { String(format: "%.1f", value) }
    return """
        ldp: Ed25519Signature2018 on one credential (credentials v1 + citizenship v1), \(f(seconds)) s each, one thread
          sign:   Aerie \(f(signRate))/s  ACA-Py 1.2.7 \(f(acapySign))/s  ratio \(f(signRate / acapySign))
          verify: Aerie \(f(verifyRate))/s  ACA-Py 1.2.7 \(f(acapyVerify))/s  ratio \(f(verifyRate / acapyVerify))
        """
}

/// ACA-Py's numbers for the same credential, from the interop helper in its venv.
private func acapyLinkedDataBench(credential: JSONValue, seed: String, seconds: Double) throws -> [String: Any] {
    let python = try ACAPyAgent.executable().deletingLastPathComponent().appendingPathComponent("python")
    let script = ACAPyAgent.packageRoot.appendingPathComponent("Tests/Interop/acapy_ldp.py")
    let operation: [String: Any] = [
        "op": "bench", "document": try JSONSerialization.jsonObject(with: Data(credential.serialized())),
        "seed": seed, "suite": "Ed25519Signature2018", "seconds": seconds,
    ]
    let process = Process()
    process.executableURL = python
    process.arguments = [script.path]
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: [operation]))
    try input.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard let results = try JSONSerialization.jsonObject(with: data) as? [[String: Any]], let first = results.first,
        first["error"] == nil
    else {
        throw LinkedDataBenchFailure(
            description: "the ACA-Py ldp bench failed: \(String(decoding: data.prefix(2000), as: UTF8.self))")
    }
    return first
}

private struct LinkedDataBenchFailure: Error, CustomStringConvertible {
    let description: String
}
