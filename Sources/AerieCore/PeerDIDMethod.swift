/// The DID methods Aerie makes its own pairwise DIDs in for didexchange (and DID Rotate), by
/// their wire names (ACA-Py's `use_did_method` values). AerieCrypto makes them
/// (`PeerDIDMethod.make`).
public enum PeerDIDMethod: String, Sendable, Hashable, CaseIterable, Codable {
    case peer2 = "did:peer:2"
    case peer4 = "did:peer:4"

    /// The method `did` is in (a did:peer:4 in either form), nil for any other DID.
    public init?(of did: String) {
        if did.hasPrefix("did:peer:2.") {
            self = .peer2
        } else if did.hasPrefix("did:peer:4") {
            self = .peer4
        } else {
            return nil
        }
    }

    /// The method a caller names in `field` (`didMethod`): nil when it names none; throws
    /// `invalid_params` for anything but a wire name (a did:peer:1 is resolved with the document
    /// it comes with, never made: it is not one of them).
    public static func parameter(_ name: String?, field: String = "didMethod") throws -> PeerDIDMethod? {
        guard let name else { return nil }
        guard let method = PeerDIDMethod(rawValue: name) else {
            throw AerieError.invalidParams(
                "\(field) must be \(allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or "))", field: field)
        }
        return method
    }
}

extension ParamDoc {
    /// `didMethod` of the methods that start a didexchange Request.
    public static let didMethod = ParamDoc(
        "didMethod", "string", required: false,
        "our DID's method in a didexchange Request: \"did:peer:4\" (default for didexchange 1.1) or \"did:peer:2\" (default for 1.0); connections/1.0 keeps its unqualified DID"
    )
}
