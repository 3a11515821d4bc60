import AerieCore
import AerieCrypto
import AerieTesting
import Foundation

/// `aerie-bench ldp`: Ed25519Signature2018 on one credential (credentials v1 with the citizenship
/// context, the interop harness's shape), one thread, per second and CPU per operation: sign and
/// verify the credential, and present it (a DIF Verifiable Presentation of the credential, bound
/// to the holder's did:key as a stored one is, with its submission, signed by the holder with a
/// challenge and domain, as `proofs.present` makes it). The anchor is ACA-Py 1.2.7's own
/// `vc.ld_proofs` and `vc_ld.prove` doing the same work in the same run (Tests/Interop/acapy_ldp.py
/// `bench`).
func runLinkedDataBench(seconds: Double) throws -> String {
    let issuerSeed = "aerie-ldp-issuer-000000000000000"
    let holderSeed = "aerie-ldp-holder-000000000000000"
    let issuerKey = try Ed25519KeyPair(seed: Array(issuerSeed.utf8))
    let holderKey = try Ed25519KeyPair(seed: Array(holderSeed.utf8))
    let holder = try DIDKey.did(verkey: holderKey.verkey)
    let credential = try JSONValue(
        parsing: #"""
            {"@context": ["https://www.w3.org/2018/credentials/v1", "https://w3id.org/citizenship/v1"],
             "type": ["VerifiableCredential", "PermanentResident"], "id": "https://credential.example.com/residents/1234567890",
             "issuer": "\#(try DIDKey.did(verkey: issuerKey.verkey))", "issuanceDate": "2020-01-01T12:00:00Z",
             "credentialSubject": {"id": "\#(holder)", "type": ["PermanentResident"], "givenName": "ALICE", "familyName": "SMITH",
               "gender": "Female", "birthCountry": "Bahamas", "birthDate": "1958-07-17"}}
            """#)
    let issuerMethod = try DIDKey.keyReference(verkey: issuerKey.verkey)
    let holderMethod = try DIDKey.keyReference(verkey: holderKey.verkey)
    func signOnce() throws -> JSONValue {
        try LinkedDataProofs.sign(
            credential, suite: .ed25519Signature2018, key: issuerKey, verificationMethod: issuerMethod, purpose: .assertionMethod,
            created: Date())
    }
    let stored = try signOnce()
    _ = try LinkedDataProofs.verify(stored, purpose: .assertionMethod)
    let submission: JSONValue = [
        "id": "a7b4c1d2-3e4f-4a5b-8c6d-7e8f9a0b1c2d", "definition_id": "32f54163-7166-48f1-93d8-ff217bdb0653",
        "descriptor_map": [["id": "citizenship_input_1", "format": "ldp_vc", "path": "$.verifiableCredential[0]"]],
    ]
    let purpose = ProofPurpose.authentication(challenge: "3fa85f64-5717-4562-b3fc-2c963f66afa7", domain: "verifier.example")
    func presentOnce() throws -> JSONValue {
        try LinkedDataProofs.sign(
            VerifiablePresentation.make(credentials: [stored], holder: holder, submission: submission), suite: .ed25519Signature2018,
            key: holderKey, verificationMethod: holderMethod, purpose: purpose, created: Date())
    }
    _ = try LinkedDataProofs.verify(try presentOnce(), purpose: purpose)

    let clock = ContinuousClock()
    /// Operations per second, and CPU (user + system, this process) per operation in µs.
    func measure(_ body: () throws -> Void) rethrows -> (rate: Double, cpu: Double) {
        var count = 0
        let cpu = processCPUSeconds()
        let start = clock.now
        while clock.now - start < .seconds(seconds) {
            try body()
            count += 1
        }
        let elapsed = clock.now - start
        let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return (Double(count) / wall, (processCPUSeconds() - cpu) / Double(count) * 1e6)
    }
    let sign = try measure { _ = try signOnce() }
    let verify = try measure { _ = try LinkedDataProofs.verify(stored, purpose: .assertionMethod) }
    let present = try measure { _ = try presentOnce() }

    let acapy = try acapyLinkedDataBench(
        credential: credential, seed: issuerSeed, seconds: seconds,
        present: [
            "credential": try JSONSerialization.jsonObject(with: Data(stored.serialized())), "seed": holderSeed,
            "challenge": "3fa85f64-5717-4562-b3fc-2c963f66afa7", "domain": "verifier.example",
            "submission": try JSONSerialization.jsonObject(with: Data(submission.serialized())),
        ])
    func f(_ value: Double) -> String { String(format: "%.1f", value) }
    func row(_ name: String, _ ours: (rate: Double, cpu: Double)) -> String {
        let theirs = (acapy["\(name)_per_second"] as? Double ?? .nan, acapy["\(name)_cpu_us"] as? Double ?? .nan)
        return "  \(name.padding(toLength: 8, withPad: " ", startingAt: 0)) Aerie \(f(ours.rate))/s (\(f(ours.cpu)) µs CPU)  "
            + "ACA-Py 1.2.7 \(f(theirs.0))/s (\(f(theirs.1)) µs CPU)  ratio \(f(ours.rate / theirs.0)), CPU \(f(theirs.1 / ours.cpu))"
    }
    return """
        ldp: Ed25519Signature2018, one credential (credentials v1 + citizenship v1), \(f(seconds)) s each, one thread
        \(row("sign", sign))
        \(row("verify", verify))
        \(row("present", present))
        """
}

/// User + system CPU seconds of this process so far.
private func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// ACA-Py's numbers for the same credential, from the interop helper in its venv.
private func acapyLinkedDataBench(credential: JSONValue, seed: String, seconds: Double, present: [String: Any]) throws
    -> [String: Any]
{
    let python = try ACAPyAgent.executable().deletingLastPathComponent().appendingPathComponent("python")
    let script = ACAPyAgent.packageRoot.appendingPathComponent("Tests/Interop/acapy_ldp.py")
    let operation: [String: Any] = [
        "op": "bench", "document": try JSONSerialization.jsonObject(with: Data(credential.serialized())),
        "seed": seed, "suite": "Ed25519Signature2018", "seconds": seconds, "present": present,
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
