import AerieCore
import Foundation

/// The RFC 0434 messages Aerie writes and reads as invitee.
public enum OutOfBandMessages {
    static let prefix = "https://didcomm.org/out-of-band/"
    /// The minor versions read and answered.
    static let versions = ["1.0", "1.1"]

    public static func reuseType(version: String) -> String { "\(prefix)\(version)/handshake-reuse" }
    public static func reuseAcceptedType(version: String) -> String { "\(prefix)\(version)/handshake-reuse-accepted" }
    public static func problemReportType(version: String) -> String { "\(prefix)\(version)/problem_report" }

    public static var reuseAcceptedTypes: [String] { versions.map(reuseAcceptedType) }
    public static var problemReportTypes: [String] { versions.map(problemReportType) }

    /// The protocol version of an invitation's `@type` that Aerie answers in: its own minor
    /// version when known, else 1.1 (RFC 0003: a peer reads any minor version of its major).
    public static func version(of invitation: Invitation) -> String {
        let type = InboundMessage.normalizedType(invitation.type ?? "")
        return versions.first { type == "\(prefix)\($0)/invitation" } ?? "1.1"
    }

    /// A handshake-reuse: its `@id` is the thread, `pthid` the invitation's `@id`.
    public static func reuse(id: String = UUID().uuidString.lowercased(), invitationId: String, version: String) -> JSONValue {
        .object([
            "@type": .string(reuseType(version: version)),
            "@id": .string(id),
            "~thread": .object(["thid": .string(id), "pthid": .string(invitationId)]),
        ])
    }

    /// `~thread.pthid`, bounded.
    public static func parentThreadId(_ message: JSONValue) -> String? {
        guard let pthid = message["~thread"]?["pthid"]?.stringValue, !pthid.isEmpty, pthid.utf8.count <= 256 else {
            return nil
        }
        return pthid
    }
}
