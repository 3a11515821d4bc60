import AerieCore
import AerieCrypto
import Foundation

/// DID Rotate 1.0 (RFC 0794) messages, pure: reading a peer's `rotate` and resolving its
/// `to_did`, and writing ours, the `ack` and the problem report. DIDComm v1 has no `from_prior`:
/// the RFC takes a `rotate` only authcrypted (or signed) by the connection's peer, which the
/// inbound pipeline checks before a handler runs (`InboundSenders.peer`); ACA-Py sends and
/// checks nothing more.
public enum DIDRotateMessages {
    public static let protocolURI = "https://didcomm.org/did-rotate/1.0"
    public static let rotateType = protocolURI + "/rotate"
    public static let ackType = protocolURI + "/ack"
    public static let problemReportType = protocolURI + "/problem-report"
    public static let hangupType = protocolURI + "/hangup"

    /// The problem codes of RFC 0794.
    public enum Problem: String, Sendable, Hashable {
        /// The method is one we resolve, but this DID does not resolve.
        case unresolvable = "e.did.unresolvable"
        /// A method we do not resolve.
        case methodUnsupported = "e.did.method_unsupported"
        /// The DID resolves, but names no usable DIDComm service (key and endpoint).
        case docUnsupported = "e.did.doc_unsupported"
    }

    /// Why a peer's `to_did` cannot be rotated to: the RFC's code and a reason safe to show.
    public struct Refusal: Error, Sendable, Hashable {
        public var problem: Problem
        public var explain: String

        public init(_ problem: Problem, _ explain: String) {
            self.problem = problem
            self.explain = explain
        }
    }

    /// A peer's `rotate`, read: the DID it names, or why it cannot be used (the DID is nil when
    /// absent or over `PeerFieldLimits.did`, so it is not echoed back).
    public struct Rotate: Sendable, Hashable {
        public var toDid: String?
        public var peer: Result<ConnectionMessages.PeerConnection, Refusal>
    }

    /// Reads and resolves a peer's `rotate`: did:peer:2 and did:peer:4 (long form) resolve from
    /// themselves (`DIDExchangeMessages.resolve`, every field within `PeerFieldLimits`); a did:key
    /// resolves but has no service; a did:peer:1 needs its document, which a `rotate` cannot carry;
    /// other methods are not resolved here.
    public static func readRotate(_ message: JSONValue) -> Rotate {
        guard let did = message["to_did"]?.stringValue, !did.isEmpty else {
            return Rotate(toDid: nil, peer: .failure(Refusal(.unresolvable, "the rotate message names no to_did")))
        }
        if let violation = PeerFieldLimits.did.violation(did, name: "to_did") {
            return Rotate(toDid: nil, peer: .failure(Refusal(.unresolvable, violation)))
        }
        return Rotate(toDid: did, peer: resolve(did))
    }

    static func resolve(_ did: String) -> Result<ConnectionMessages.PeerConnection, Refusal> {
        if did.hasPrefix("did:peer:2.") {
            guard let peer = try? PeerDID2(did) else { return .failure(Refusal(.unresolvable, "the did:peer:2 does not decode")) }
            guard (try? peer.didCommService()) ?? nil != nil else {
                return .failure(Refusal(.docUnsupported, "the did:peer:2 names no DIDComm service"))
            }
        } else if did.hasPrefix("did:peer:4") {
            guard PeerDID4.isLongForm(did), (try? PeerDID4.documentJSON(did)) != nil else {
                return .failure(Refusal(.unresolvable, "only a did:peer:4 in long form can be resolved from itself"))
            }
        } else if PeerDID1.isPeerDID1(did) {
            return .failure(Refusal(.unresolvable, "a did:peer:1 resolves only with its DID document, which a rotate does not carry"))
        } else if did.hasPrefix("did:key:") {
            guard (try? KeyReference.verkeyBase58(from: did)) != nil else {
                return .failure(Refusal(.unresolvable, "the did:key does not decode"))
            }
            return .failure(Refusal(.docUnsupported, "a did:key names no DIDComm service endpoint"))
        } else {
            return .failure(Refusal(.methodUnsupported, "only did:peer:2 and did:peer:4 are resolved here"))
        }
        do {
            return .success(try DIDExchangeMessages.resolve(did: did, in: "rotate"))
        } catch let error as AerieError {
            return .failure(Refusal(.docUnsupported, error.message))
        } catch let error as CryptoError {
            return .failure(Refusal(.docUnsupported, error.message))
        } catch {
            return .failure(Refusal(.docUnsupported, "the DID document cannot be used"))
        }
    }

    /// Our `rotate` to `did`.
    public static func rotate(to did: String, id: String = UUID.random().lowercasedString) -> JSONValue {
        ["@type": .string(rotateType), "@id": .string(id), "to_did": .string(did)]
    }

    /// The `ack` of the peer's `rotate` `rotateId`.
    public static func ack(of rotateId: String, id: String = UUID.random().lowercasedString) -> JSONValue {
        ["@type": .string(ackType), "@id": .string(id), "status": "OK", "~thread": ["thid": .string(rotateId)]]
    }

    /// The problem report answering the peer's `rotate` `rotateId`: threaded both ways, `pthid`
    /// as the RFC writes it and `thid` as ACA-Py reads it.
    public static func problemReport(
        _ refusal: Refusal, did: String?, to rotateId: String, id: String = UUID.random().lowercasedString
    ) -> JSONValue {
        [
            "@type": .string(problemReportType), "@id": .string(id),
            "~thread": ["thid": .string(rotateId), "pthid": .string(rotateId)],
            "description": ["en": .string(refusal.explain), "code": .string(refusal.problem.rawValue)],
            "problem_items": [["did": .string(did ?? "")]],
        ]
    }

    /// The `rotate` an `ack` or problem report answers: its `~thread.thid`, else `pthid`.
    public static func answeredRotate(_ message: JSONValue) -> String? {
        message["~thread"]?["thid"]?.stringValue ?? message["~thread"]?["pthid"]?.stringValue
    }

    /// Both threads an answer may name (a problem report's `thid` and `pthid`).
    static func threads(_ message: JSONValue) -> [String] {
        [message["~thread"]?["thid"]?.stringValue, message["~thread"]?["pthid"]?.stringValue].compactMap { $0 }
    }
}
