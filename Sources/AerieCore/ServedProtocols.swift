import Synchronization

/// The DIDComm protocols the server's enabled plugins serve, read from the router once it is
/// built (a plugin cannot see the router it registers into): a protocol is served when a plugin
/// registered an inbound type of it, so a disabled plugin's protocols are not listed.
public final class ServedProtocols: Sendable {
    private let protocols = Mutex<[String]>([])

    public init() {}

    /// Takes the protocols of `router`'s inbound types (`https://didcomm.org/<name>/<version>`).
    public func install(_ router: MethodRouter) {
        let served = Self.protocols(ofTypes: router.inbound.keys)
        protocols.withLock { $0 = served }
    }

    /// The protocol URIs, sorted.
    public var all: [String] { protocols.withLock { $0 } }

    /// The protocol of each message type (the type without its last path segment), sorted and
    /// without duplicates.
    public static func protocols(ofTypes types: some Sequence<String>) -> [String] {
        Set(types.compactMap { type -> String? in
            guard let slash = type.lastIndex(of: "/"), slash != type.startIndex else { return nil }
            return String(type[..<slash])
        }).sorted()
    }
}
