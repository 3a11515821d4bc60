/// A DIDComm v1 destination: endpoint, recipient verkeys and routing verkeys (base58).
public struct DIDCommService: Sendable, Hashable {
    public var serviceEndpoint: String
    public var recipientKeys: [String]
    public var routingKeys: [String]

    public init(serviceEndpoint: String, recipientKeys: [String], routingKeys: [String]) {
        self.serviceEndpoint = serviceEndpoint
        self.recipientKeys = recipientKeys
        self.routingKeys = routingKeys
    }
}
