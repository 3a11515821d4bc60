import Foundation
import Testing

@testable import AerieCrypto

/// Aerie against an independent implementation: ACA-Py 1.2.7's own pack/unpack (askar) and
/// signature decorator, driven through Tests/Interop/acapy_didcomm.py.
///
/// The venv is installed by ./scripts/test; a missing venv fails these tests rather than
/// skipping them, so interop is never silently untested.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct InteropTests {
    // ACA-Py seeds are 32 ASCII characters; the same bytes seed our Ed25519 keys.
    static let senderSeed = "aerie-interop-sender-00000000000"
    static let recipientSeed = "aerie-interop-recipient-00000000"
    static let otherRecipientSeed = "aerie-interop-other-000000000000"
    static let mediator1Seed = "aerie-interop-mediator-one-00000"
    static let mediator2Seed = "aerie-interop-mediator-two-00000"

    static func key(_ seed: String) -> Ed25519KeyPair { try! Ed25519KeyPair(seed: Array(seed.utf8)) }

    static let message =
        #"{"@type": "https://didcomm.org/basicmessage/1.0/message", "@id": "5c6a0b6e", "content": "h\u00e9llo / w\u00f6rld"}"#

    @Test func sameKeysFromSeeds() async throws {
        let seeds = [Self.senderSeed, Self.recipientSeed, Self.mediator1Seed]
        let results = try await ACAPy.run(seeds.map { ["op": "verkey", "seed": $0] })
        for (seed, result) in zip(seeds, results) {
            #expect(result["verkey"] as? String == Self.key(seed).verkeyBase58)
        }
    }

    @Test(arguments: [true, false])
    func aeriePacksACAPyUnpacks(authcrypt: Bool) async throws {
        let recipients = [Self.key(Self.otherRecipientSeed), Self.key(Self.recipientSeed)]
        let packed = try DIDCommEnvelope.pack(
            Array(Self.message.utf8), to: recipients.map(\.verkeyBase58),
            from: authcrypt ? Self.key(Self.senderSeed) : nil)
        let result = try await ACAPy.run([
            ["op": "unpack", "envelope": String(decoding: packed, as: UTF8.self), "seeds": [Self.recipientSeed]]
        ])[0]
        let layers = try #require(result["layers"] as? [[String: Any]], "ACA-Py: \(result)")
        #expect(layers.count == 1)
        #expect(layers[0]["message"] as? String == Self.message)
        #expect(layers[0]["recipient_verkey"] as? String == Self.key(Self.recipientSeed).verkeyBase58)
        if authcrypt {
            #expect(layers[0]["sender_verkey"] as? String == Self.key(Self.senderSeed).verkeyBase58)
        } else {
            #expect(layers[0]["sender_verkey"] is NSNull)
        }
    }

    @Test(arguments: [true, false])
    func acapyPacksAerieUnpacks(authcrypt: Bool) async throws {
        let recipient = Self.key(Self.recipientSeed)
        var op: [String: Any] = [
            "op": "pack", "message": Self.message,
            "to": [Self.key(Self.otherRecipientSeed).verkeyBase58, recipient.verkeyBase58],
        ]
        op["sender_seed"] = authcrypt ? Self.senderSeed : NSNull()
        let result = try await ACAPy.run([op])[0]
        let envelope = try #require(result["envelope"] as? String, "ACA-Py: \(result)")
        let unpacked = try DIDCommEnvelope.unpack(Array(envelope.utf8)) { kids in
            #expect(kids.count == 2)
            return recipient
        }
        #expect(String(decoding: unpacked.plaintext, as: UTF8.self) == Self.message)
        #expect(unpacked.recipientVerkey == recipient.verkeyBase58)
        #expect(unpacked.senderVerkey == (authcrypt ? Self.key(Self.senderSeed).verkeyBase58 : nil))
    }

    /// Forward wrapping both ways, with two mediators.
    @Test func forwardWrapped() async throws {
        let recipient = Self.key(Self.recipientSeed)
        let sender = Self.key(Self.senderSeed)
        let m1 = Self.key(Self.mediator1Seed)
        let m2 = Self.key(Self.mediator2Seed)
        let routing = [m1.verkeyBase58, m2.verkeyBase58]

        // Aerie wraps, ACA-Py peels the forwards with the mediator keys, then opens the message.
        let packed = try DIDCommEnvelope.pack(Array(Self.message.utf8), to: [recipient.verkeyBase58], from: sender)
        let wrapped = try Forward.wrap(packed, recipientKey: recipient.verkeyBase58, routingKeys: routing)
        let results = try await ACAPy.run([
            [
                "op": "unpack", "envelope": String(decoding: wrapped, as: UTF8.self),
                "seeds": [Self.mediator1Seed, Self.mediator2Seed, Self.recipientSeed],
            ],
            [
                "op": "pack", "message": Self.message, "to": [recipient.verkeyBase58], "sender_seed": Self.senderSeed,
                "routing_keys": routing,
            ],
        ])
        let layers = try #require(results[0]["layers"] as? [[String: Any]], "ACA-Py: \(results[0])")
        #expect(layers.count == 3)
        #expect(
            layers.map { $0["recipient_verkey"] as? String } == [
                m2.verkeyBase58, m1.verkeyBase58, recipient.verkeyBase58,
            ])
        #expect(layers[2]["message"] as? String == Self.message)
        #expect(layers[2]["sender_verkey"] as? String == sender.verkeyBase58)
        let outerForward = try #require(
            JSONSerialization.jsonObject(with: Data((layers[0]["message"] as? String ?? "").utf8)) as? [String: Any])
        #expect(outerForward["to"] as? String == m1.verkeyBase58)

        // ACA-Py wraps (PackWireFormat.pack), Aerie peels.
        let envelope = try #require(results[1]["envelope"] as? String, "ACA-Py: \(results[1])")
        let outer = try DIDCommEnvelope.unpack(Array(envelope.utf8)) { _ in m2 }
        let (to2, inner2) = try Forward.unwrap(outer.plaintext)
        #expect(to2 == m1.verkeyBase58)
        let middle = try DIDCommEnvelope.unpack(inner2) { _ in m1 }
        let (to1, inner1) = try Forward.unwrap(middle.plaintext)
        #expect(to1 == recipient.verkeyBase58)
        let final = try DIDCommEnvelope.unpack(inner1) { _ in recipient }
        #expect(String(decoding: final.plaintext, as: UTF8.self) == Self.message)
        #expect(final.senderVerkey == sender.verkeyBase58)
    }

    /// connection~sig both ways.
    @Test func signatureDecorator() async throws {
        let signer = Self.key(Self.senderSeed)
        let value: [String: Any] = [
            "DID": "8LXvA8e8DEoLfxxdtohXHU", "DIDDoc": ["service": [["serviceEndpoint": "https://example.org/a/b"]]],
        ]
        let ours = try SignatureDecorator.sign(
            .object([
                "DID": "8LXvA8e8DEoLfxxdtohXHU",
                "DIDDoc": ["service": [["serviceEndpoint": "https://example.org/a/b"]]],
            ]), with: signer)
        let oursJSON = try JSONSerialization.jsonObject(with: JSONEncoder().encode(ours))
        let results = try await ACAPy.run([
            ["op": "verify", "decorator": oursJSON],
            ["op": "sign", "value": value, "seed": Self.senderSeed],
        ])
        #expect(results[0]["valid"] as? Bool == true, "ACA-Py: \(results[0])")
        #expect(NSDictionary(dictionary: results[0]["value"] as? [String: Any] ?? [:]).isEqual(to: value))

        let theirs = try #require(results[1]["decorator"] as? [String: Any], "ACA-Py: \(results[1])")
        let decoded = try JSONDecoder().decode(
            SignatureDecorator.self, from: JSONSerialization.data(withJSONObject: theirs))
        let verified = try decoded.verify(expectedSigner: signer.verkeyBase58)
        #expect(verified.signer == signer.verkeyBase58)
        #expect(verified.value["DIDDoc"]?["service"] == [["serviceEndpoint": "https://example.org/a/b"]])
    }
}

extension InteropTests {
    /// A did:peer:2 we make resolves with the did_peer_2 package ACA-Py uses, to the same
    /// keys and service; and ACA-Py-shaped ones parse here (see DIDTests).
    @Test func peerDID2ResolvesInACAPy() async throws {
        let key = Self.key(Self.recipientSeed)
        let did = try PeerDID2.make(
            verkey: key.verkey, serviceEndpoint: "https://aerie.example/didcomm?x=1",
            routingKeys: [Self.key(Self.mediator1Seed).verkeyBase58])
        let result = try await ACAPy.run([["op": "resolve_peer2", "did": did]])[0]
        let document = try #require(result["document"] as? [String: Any], "ACA-Py: \(result)")
        let methods = try #require(document["verificationMethod"] as? [[String: Any]])
        #expect(methods.map { $0["id"] as? String } == ["#key-1", "#key-2"])
        #expect(methods[0]["publicKeyMultibase"] as? String == (try DIDKey.multibase(verkey: key.verkey)))
        #expect(document["authentication"] as? [String] == ["#key-1"])
        #expect(document["keyAgreement"] as? [String] == ["#key-2"])
        let services = try #require(document["service"] as? [[String: Any]])
        #expect(services.count == 1)
        #expect(services[0]["type"] as? String == "did-communication")
        #expect(services[0]["serviceEndpoint"] as? String == "https://aerie.example/didcomm?x=1")
        #expect(services[0]["recipientKeys"] as? [String] == ["#key-1"])
        #expect(
            services[0]["routingKeys"] as? [String] == [
                try DIDKey.keyReference(verkey: Self.key(Self.mediator1Seed).verkey)
            ])
    }
}

/// Runs the ACA-Py helper: one JSON array of operations in, one of results out.
enum ACAPy {
    static var packageRoot: URL {
        // Tests/AerieCryptoTests/InteropTests.swift -> package root
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    static func python() throws -> String {
        let path =
            ProcessInfo.processInfo.environment["AERIE_INTEROP_PYTHON"]
            ?? packageRoot.appendingPathComponent(".interop/venv-1.2.7/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw InteropUnavailable(
                message:
                    "ACA-Py interop venv missing at \(path): run ./scripts/test (it installs acapy-agent 1.2.7 into .interop/venv-1.2.7), or set AERIE_INTEROP_PYTHON"
            )
        }
        return path
    }

    /// Runs the operations in one ACA-Py process, waited for on a thread of its own: a test
    /// blocked in `waitUntilExit` would hold one of the concurrency pool's threads (two on this
    /// machine) for the seconds Python takes to start, and two such tests at once stalled every
    /// other test's async work (a pool test's waits ran past their 10 s timeout).
    /// `script` names a helper in Tests/Interop (`acapy_ldp.py` for Linked Data proofs).
    static func run(_ operations: [[String: Any]], script: String = "acapy_didcomm.py") async throws -> [[String: Any]] {
        let request = try JSONSerialization.data(withJSONObject: operations)
        let outcome: Outcome = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try runBlocking(request, script: script) })
            }
        }
        guard outcome.status == 0,
            let results = try? JSONSerialization.jsonObject(with: outcome.stdout) as? [[String: Any]],
            results.count == operations.count
        else {
            throw InteropUnavailable(
                message:
                    "ACA-Py helper failed (status \(outcome.status)): \(String(decoding: outcome.stderr.suffix(2000), as: UTF8.self))"
            )
        }
        return results
    }

    /// What the helper process left: its exit status and its two outputs.
    private struct Outcome: Sendable {
        let status: Int32
        let stdout: Data
        let stderr: Data
    }

    private static func runBlocking(_ request: Data, script: String) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try python())
        process.arguments = [packageRoot.appendingPathComponent("Tests/Interop/\(script)").path]
        let input = Pipe()
        let output = Pipe()
        // stderr goes to a file: nothing to drain concurrently, and it is there for the failure message.
        let errorFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "aerie-interop-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errorFile) }
        process.standardInput = input
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: errorFile)
        try process.run()
        input.fileHandleForWriting.write(request)
        try input.fileHandleForWriting.close()
        let stdoutData = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let stderrData = (try? Data(contentsOf: errorFile)) ?? Data()
        return Outcome(status: process.terminationStatus, stdout: stdoutData, stderr: stderrData)
    }
}

struct InteropUnavailable: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
