import AerieCore
import Foundation

/// Linked Data proofs (Ed25519Signature2018 and Ed25519Signature2020 over did:key keys) on
/// JSON-LD credentials and presentations, made and checked as ACA-Py does: the proof options
/// (with the document's `@context`, without `jws` / `proofValue`) and the document (without
/// `proof`) are each canonicalized (URDNA2015) and hashed with SHA-256; the signature covers the
/// two hashes concatenated.
public enum LinkedDataProofs {
    static let securityV2Context = "https://w3id.org/security/v2"
    static let ed25519Signature2020Context = "https://w3id.org/security/suites/ed25519-2020/v1"
    static let credentialsIssuer = "https://www.w3.org/2018/credentials#issuer"
    static let verifiableCredentialType = "https://www.w3.org/2018/credentials#VerifiableCredential"
    /// The detached JWS header of Ed25519Signature2018, as ACA-Py writes it (`json.dumps`).
    static let jwsHeader = #"{"alg": "EdDSA", "b64": false, "crit": ["b64"]}"#

    /// Verifies the document's `proof` (one of them, when it holds several: the first whose type
    /// and `proofPurpose` match and whose signature verifies) and answers which key made it.
    ///
    /// For `.assertionMethod` on a credential, the `issuer` must be the key's controller. For
    /// `.authentication`, the proof's `challenge` (and `domain`, when given) must match.
    /// Throws a `CryptoError`: `unknown_context` (naming the URL), `invalid_jsonld`,
    /// `limit_exceeded`, `invalid_proof`, `unsupported_algorithm` (an unknown proof type),
    /// `invalid_did` (a verification method that is not an Ed25519 did:key),
    /// `proof_purpose_mismatch` (purpose, challenge, domain or issuer), `invalid_signature`.
    public static func verify(
        _ document: JSONValue, purpose: ProofPurpose, contexts: JSONLDContexts = .bundled,
        limits: LinkedDataLimits = .default
    ) throws -> VerifiedProof {
        guard case .object(var fields) = document else {
            throw CryptoError(.invalidProof, "a signed document must be a JSON object")
        }
        guard let proofValue = fields.removeValue(forKey: "proof") else {
            throw CryptoError(.invalidProof, "the document has no proof")
        }
        let proofs: [JSONValue] = if case .array(let items) = proofValue { items } else { [proofValue] }
        guard proofs.count <= 16 else { throw CryptoError(.limitExceeded, "the document has more than 16 proofs") }
        var firstFailure: CryptoError?
        var unsigned: (nQuads: String, expanded: [JSONValue])?
        for case .object(let proof) in proofs {
            do {
                let candidate = try Candidate(proof, purpose: purpose)
                if unsigned == nil {
                    unsigned = try canonicalize(.object(fields), contexts: contexts, limits: limits)
                }
                let data = try verifyData(
                    proof: proof, documentContext: fields["@context"], canonicalDocument: unsigned!.nQuads,
                    contexts: contexts, limits: limits)
                guard Ed25519.verify(signature: candidate.signature, message: candidate.signingInput(data), verkey: candidate.verkey)
                else {
                    throw CryptoError(.invalidSignature, "the \(candidate.suite.type) signature does not verify")
                }
                if case .assertionMethod = purpose {
                    try checkIssuer(unsigned!.expanded, controller: candidate.controller)
                }
                return VerifiedProof(
                    suite: candidate.suite, verificationMethod: candidate.verificationMethod,
                    controller: candidate.controller, verkey: candidate.verkey, purpose: purpose,
                    created: proof["created"]?.stringValue)
            } catch let error as CryptoError {
                if firstFailure == nil || (firstFailure!.code == .unsupportedAlgorithm && error.code != .unsupportedAlgorithm) {
                    firstFailure = error
                }
            }
        }
        throw firstFailure ?? CryptoError(.invalidProof, "the document's proof is not a JSON object")
    }

    /// The document with a new proof added to its `proof` (beside any it already has).
    ///
    /// `verificationMethod` must be the did:key URL of `key` (`did:key:z6Mk…#z6Mk…`). For
    /// `.ed25519Signature2020` the suite's context (`https://w3id.org/security/suites/ed25519-2020/v1`)
    /// is appended to the document's `@context` when missing, as ACA-Py does. `created` is
    /// written in whole seconds, UTC.
    public static func sign(
        _ document: JSONValue, suite: ProofSuite, key: Ed25519KeyPair, verificationMethod: String,
        purpose: ProofPurpose, created: Date, contexts: JSONLDContexts = .bundled,
        limits: LinkedDataLimits = .default
    ) throws -> JSONValue {
        guard case .object(var fields) = document else {
            throw CryptoError(.invalidMessage, "only a JSON object can be signed")
        }
        let method = try DIDKeyMethod(verificationMethod)
        guard method.verkey == key.verkey else {
            throw CryptoError(.invalidKey, "the verification method is not the signing key's did:key")
        }
        if suite == .ed25519Signature2020 {
            var context: [JSONValue] = switch fields["@context"] {
            case .array(let items)?: items
            case let single?: [single]
            case nil: []
            }
            if !context.contains(.string(ed25519Signature2020Context)) {
                context.append(.string(ed25519Signature2020Context))
                fields["@context"] = .array(context)
            }
        }
        let existing = fields.removeValue(forKey: "proof")
        var proof: [String: JSONValue] = [
            "type": .string(suite.type),
            "verificationMethod": .string(verificationMethod),
            "created": .string(created.iso8601Text),
            "proofPurpose": .string(purpose.term),
        ]
        if case .authentication(let challenge, let domain) = purpose {
            proof["challenge"] = .string(challenge)
            if let domain { proof["domain"] = .string(domain) }
        }
        let canonicalDocument = try canonicalize(.object(fields), contexts: contexts, limits: limits).nQuads
        let data = try verifyData(
            proof: proof, documentContext: fields["@context"], canonicalDocument: canonicalDocument, contexts: contexts,
            limits: limits)
        switch suite {
        case .ed25519Signature2018:
            let header = Base64.encodeURL(Array(jwsHeader.utf8))
            let signature = key.sign(Array((header + ".").utf8) + data)
            proof["jws"] = .string(header + ".." + Base64.encodeURL(signature))
        case .ed25519Signature2020:
            proof["proofValue"] = .string("z" + Base58.encode(key.sign(data)))
        }
        switch existing {
        case nil: fields["proof"] = .object(proof)
        case .array(let items)?: fields["proof"] = .array(items + [.object(proof)])
        case let single?: fields["proof"] = .array([single, .object(proof)])
        }
        return .object(fields)
    }

    /// SHA-256 of the canonical proof options, then of the canonical document.
    private static func verifyData(
        proof: [String: JSONValue], documentContext: JSONValue?, canonicalDocument: String, contexts: JSONLDContexts,
        limits: LinkedDataLimits
    ) throws -> [UInt8] {
        var options = proof
        options["@context"] = documentContext ?? .string(securityV2Context)
        for name in ["jws", "signatureValue", "proofValue"] { options.removeValue(forKey: name) }
        let canonicalOptions = try canonicalize(.object(options), contexts: contexts, limits: limits).nQuads
        return SHA256.hash(Array(canonicalOptions.utf8)) + SHA256.hash(Array(canonicalDocument.utf8))
    }

    /// The canonical N-Quads of a document and its expanded form. A property its contexts do not
    /// define is refused, as ACA-Py refuses it: it would be dropped from the N-Quads, so the
    /// signature would not cover it and anyone could change it.
    private static func canonicalize(
        _ document: JSONValue, contexts: JSONLDContexts, limits: LinkedDataLimits
    ) throws -> (nQuads: String, expanded: [JSONValue]) {
        let processor = JSONLDProcessor(contexts: contexts, limits: limits)
        let expanded = try expandSignable(document, with: processor)
        let nQuads = try RDFCanonicalization.urdna2015(try processor.toRDF(expanded: expanded), limits: limits)
        return (nQuads, expanded)
    }

    /// Checks that a proof could be made over `document` and checked, before anyone signs it
    /// (a credential offered, before it is requested): every context in `contexts` (the bundled
    /// set; `unknown_context` names any other, never fetched) and every property defined by them
    /// (`invalid_jsonld`), within `limits`. Expansion only, no canonicalization.
    public static func checkSignable(
        _ document: JSONValue, contexts: JSONLDContexts = .bundled, limits: LinkedDataLimits = .default
    ) throws {
        _ = try expandSignable(document, with: JSONLDProcessor(contexts: contexts, limits: limits))
    }

    /// The expanded document, refusing a property its contexts do not define.
    private static func expandSignable(_ document: JSONValue, with processor: JSONLDProcessor) throws -> [JSONValue] {
        let expanded = try processor.expandDocument(document)
        if !processor.droppedProperties.isEmpty {
            let names = processor.droppedProperties.map { String($0.prefix(60)) }.joined(separator: ", ")
            throw CryptoError(
                .invalidJSONLD, "properties not defined by the document's contexts, which a proof would not cover: \(names)")
        }
        return expanded
    }

    /// A credential's `issuer` must be the DID whose key signed it (ACA-Py's
    /// CredentialIssuancePurpose).
    private static func checkIssuer(_ expanded: [JSONValue], controller: String) throws {
        guard expanded.count == 1, case .object(let node) = expanded[0] else { return }
        let isCredential = node["@type"].map { $0 == .string(verifiableCredentialType) || ($0.arrayContains(verifiableCredentialType)) } ?? false
        guard case .array(let issuers)? = node[credentialsIssuer], let first = issuers.first else {
            if isCredential { throw CryptoError(.proofPurposeMismatch, "the credential has no issuer") }
            return
        }
        guard first["@id"]?.stringValue == controller else {
            throw CryptoError(
                .proofPurposeMismatch, "the credential's issuer is not the controller of the key that signed it",
                details: "issuer \(String((first["@id"]?.stringValue ?? "?").prefix(100))), signer \(controller)")
        }
    }

    /// A proof of a supported suite and the requested purpose, its signature decoded and its
    /// key read from the did:key; nothing canonicalized yet.
    private struct Candidate {
        let suite: ProofSuite
        let verificationMethod: String
        let controller: String
        let verkey: [UInt8]
        let signature: [UInt8]
        /// For 2018, the JWS header as written (it is part of what was signed).
        let jwsHeader: String?

        init(_ proof: [String: JSONValue], purpose: ProofPurpose) throws {
            guard let type = proof["type"]?.stringValue else {
                throw CryptoError(.invalidProof, "the proof has no type")
            }
            guard let suite = ProofSuite(rawValue: type) else {
                throw CryptoError(.unsupportedAlgorithm, "proof type \(type.prefix(100)) is not supported")
            }
            let written = proof["proofPurpose"]?.stringValue ?? "(none)"
            guard written == purpose.term else {
                throw CryptoError(.proofPurposeMismatch, "the proof's purpose is \(written.prefix(100)), expected \(purpose.term)")
            }
            if case .authentication(let challenge, let domain) = purpose {
                guard proof["challenge"]?.stringValue == challenge else {
                    throw CryptoError(.proofPurposeMismatch, "the proof's challenge is not the one requested")
                }
                if let domain, proof["domain"]?.stringValue != domain {
                    throw CryptoError(.proofPurposeMismatch, "the proof's domain is not the one requested")
                }
            }
            guard let method = proof["verificationMethod"]?.stringValue else {
                throw CryptoError(.invalidProof, "the proof has no verificationMethod")
            }
            let key = try DIDKeyMethod(method)
            self.suite = suite
            verificationMethod = method
            controller = key.controller
            verkey = key.verkey
            switch suite {
            case .ed25519Signature2018:
                guard case .string(let jws)? = proof["jws"] else {
                    throw CryptoError(.invalidProof, "the Ed25519Signature2018 proof has no jws")
                }
                let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
                guard parts.count == 3, parts[1].isEmpty, parts[0].utf8.count <= 512 else {
                    throw CryptoError(.invalidProof, "the jws is not a detached compact JWS (header..signature)")
                }
                guard let headerBytes = try? Base64.decode(String(parts[0])),
                    case .object(let header)? = try? JSONValue(parsing: headerBytes),
                    header.count == 3, header["alg"] == "EdDSA", header["b64"] == .bool(false),
                    header["crit"] == .array(["b64"])
                else {
                    throw CryptoError(.invalidProof, "the jws header is not {alg: EdDSA, b64: false, crit: [b64]}")
                }
                guard let signature = try? Base64.decode(String(parts[2])), signature.count == Ed25519.signatureByteCount
                else { throw CryptoError(.invalidProof, "the jws signature is not 64 bytes of base64url") }
                self.signature = signature
                jwsHeader = String(parts[0])
            case .ed25519Signature2020:
                guard case .string(let value)? = proof["proofValue"], value.first == "z", value.utf8.count <= 128,
                    let signature = try? Base58.decode(String(value.dropFirst())),
                    signature.count == Ed25519.signatureByteCount
                else {
                    throw CryptoError(.invalidProof, "the proofValue is not a base58btc multibase 64-byte signature")
                }
                self.signature = signature
                jwsHeader = nil
            }
        }

        func signingInput(_ data: [UInt8]) -> [UInt8] {
            guard let jwsHeader else { return data }
            return Array((jwsHeader + ".").utf8) + data
        }
    }
}

/// A verification method `did:key:z6Mk…#z6Mk…`: its DID and its Ed25519 key.
struct DIDKeyMethod {
    let controller: String
    let verkey: [UInt8]

    init(_ method: String) throws {
        guard method.utf8.count <= 256, let hash = method.firstIndex(of: "#") else {
            throw CryptoError(
                .invalidDID, "the verification method is not a did:key URL (did:key:z6Mk…#z6Mk…)",
                details: String(method.prefix(100)))
        }
        verkey = try DIDKey.verkey(from: method)
        controller = String(method[..<hash])
    }
}

extension JSONValue {
    fileprivate func arrayContains(_ text: String) -> Bool {
        if case .array(let items) = self { return items.contains(.string(text)) }
        return false
    }
}
