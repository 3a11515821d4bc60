import AerieTransport

extension AerieConfiguration {
    /// Where outbound HTTP may go (peers, invitation URLs, webhooks) and whom it trusts.
    public struct Outbound: Sendable {
        /// `AERIE_ALLOW_PRIVATE_URLS=1`: let invitation URLs reach loopback/private addresses (tests only).
        public var allowPrivateURLs = false
        /// `AERIE_ALLOWED_NETWORKS`: non-public networks (CIDR, comma-separated) that invitation
        /// URLs and peer endpoints may use all the same: private peers of a closed deployment,
        /// without `AERIE_ALLOW_PRIVATE_URLS` opening every private address.
        public var allowedNetworks: [IPNetwork] = []
        /// `AERIE_WEBHOOK_ALLOWED_NETWORKS`: non-public networks backend webhooks may be sent to.
        /// Apart from `allowedNetworks`, so that an internal receivers' network is never open to
        /// the endpoints strangers name.
        public var webhookAllowedNetworks: [IPNetwork] = []
        /// `AERIE_TLS_CA_FILE`: a PEM file of the certificate authorities outbound HTTPS (peers'
        /// endpoints, invitation URLs, webhooks) is verified against, instead of the system's.
        public var tlsCAFile: String?

        public init() {}

        /// Where peers' URLs may lead (invitation and short URLs, the endpoints strangers name,
        /// deliveries): the one policy the resolver and the delivery share.
        var peerAddresses: AddressPolicy {
            AddressPolicy(
                allowPrivateAddresses: allowPrivateURLs, allowedNetworks: allowedNetworks,
                allowedNetworksSetting: "AERIE_ALLOWED_NETWORKS")
        }

        /// Where backend webhooks may go: their receivers' own networks, never the peers'.
        var webhookAddresses: AddressPolicy {
            AddressPolicy(
                allowPrivateAddresses: allowPrivateURLs, allowedNetworks: webhookAllowedNetworks,
                allowedNetworksSetting: "AERIE_WEBHOOK_ALLOWED_NETWORKS")
        }
    }
}

extension URLResolver.Configuration {
    /// The defaults, reaching what `addresses` allows.
    init(addresses: AddressPolicy, trustedCertificates: String?, threads: Int = 2) {
        self.init(
            allowPrivateAddresses: addresses.allowPrivateAddresses, allowedNetworks: addresses.allowedNetworks,
            allowedNetworksSetting: addresses.allowedNetworksSetting, threads: threads, trustedCertificates: trustedCertificates)
    }
}

extension HTTPDelivery.Configuration {
    /// The defaults, reaching what `addresses` allows.
    init(
        addresses: AddressPolicy, trustedCertificates: String?, totalTimeout: Duration = .seconds(15),
        maxResponseBytes: Int = 1 << 20, threads: Int
    ) {
        self.init(
            allowPrivateAddresses: addresses.allowPrivateAddresses, allowedNetworks: addresses.allowedNetworks,
            allowedNetworksSetting: addresses.allowedNetworksSetting, totalTimeout: totalTimeout,
            maxResponseBytes: maxResponseBytes, threads: threads, trustedCertificates: trustedCertificates)
    }
}
