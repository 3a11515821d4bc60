import AerieTransport

extension AerieConfiguration {
    /// Where peers' URLs may lead (invitation and short URLs, the endpoints strangers name,
    /// deliveries): the one policy the resolver and the delivery share.
    var peerAddresses: AddressPolicy {
        AddressPolicy(
            allowPrivateAddresses: allowPrivateURLs, allowedNetworks: allowedNetworks, allowedNetworksSetting: "AERIE_ALLOWED_NETWORKS")
    }

    /// Where backend webhooks may go: their receivers' own networks, never the peers'.
    var webhookAddresses: AddressPolicy {
        AddressPolicy(
            allowPrivateAddresses: allowPrivateURLs, allowedNetworks: webhookAllowedNetworks,
            allowedNetworksSetting: "AERIE_WEBHOOK_ALLOWED_NETWORKS")
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
