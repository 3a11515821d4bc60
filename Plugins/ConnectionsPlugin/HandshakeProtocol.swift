import Foundation
import AerieCore

/// The handshake a connection is made with, chosen from what the invitation offers.
public enum HandshakeProtocol: String, Sendable, Hashable, CaseIterable {
    case connections10 = "https://didcomm.org/connections/1.0"
    case didExchange10 = "https://didcomm.org/didexchange/1.0"
    case didExchange11 = "https://didcomm.org/didexchange/1.1"

    /// `1.0` or `1.1`: the version written into the message types.
    public var version: String { String(rawValue.split(separator: "/").last ?? "1.0") }

    public var isDIDExchange: Bool { self != .connections10 }

    /// The method of our DID in a didexchange Request when the caller names none: did:peer:4 for
    /// 1.1, as ACA-Py (since 0.12) and Credo request by default; did:peer:2 for 1.0, which
    /// predates did:peer:4 (ACA-Py writes a legacy DIDDoc there, and reads both).
    public var defaultDIDMethod: PeerDIDMethod { self == .didExchange11 ? .peer4 : .peer2 }

    /// A protocol URI as invitations write it (`https://didcomm.org/…` or the legacy
    /// `did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/…`, with or without a trailing `/`), or nil.
    public init?(offered uri: String) {
        var normalized = InboundMessage.normalizedType(uri.trimmingCharacters(in: .whitespaces))
        while normalized.hasSuffix("/") { normalized.removeLast() }
        self.init(rawValue: normalized)
    }

    /// Aries `connections/1.0` invitations use connections/1.0. Out-of-band invitations use the
    /// first didexchange version listed; any didexchange beats `connections/1.0` (ACA-Py 1.7.0
    /// lists connections/1.0 but refuses its requests), which is taken only when no didexchange
    /// is offered. Throws `unsupported_invitation` naming what was offered otherwise.
    public static func choose(kind: Invitation.Kind, offered: [String]) throws -> HandshakeProtocol {
        switch kind {
        case .aries:
            return .connections10
        case .outOfBand:
            let known = offered.prefix(50).compactMap(HandshakeProtocol.init(offered:))
            if let didExchange = known.first(where: \.isDIDExchange) { return didExchange }
            if known.contains(.connections10) { return .connections10 }
            guard !offered.isEmpty else {
                throw AerieError(
                    .unsupportedInvitation,
                    "this out-of-band invitation offers no handshake, only an attached request: outOfBand.accept runs it")
            }
            let listed = offered.prefix(10).map { String($0.prefix(200)) }.joined(separator: ", ")
            throw AerieError(
                .unsupportedInvitation,
                "this out-of-band invitation offers no handshake Aerie supports (connections/1.0, didexchange/1.0 or 1.1); offered: \(listed)")
        case .proprietary, .proprietaryAbbreviated:
            throw AerieError(
                .unsupportedInvitation, "proprietary (Evernym agency) invitations cannot be connected: their agency protocol is retired")
        }
    }
}
