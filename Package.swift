// swift-tools-version:6.1
import Foundation
import PackageDescription

let package = Package(
    name: "Aerie",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "aerie-server", targets: ["aerie-server"]),
        .executable(name: "aerie-admin", targets: ["aerie-admin"]),
        .executable(name: "aerie-bench", targets: ["aerie-bench"]),
        .library(name: "AerieClient", targets: ["AerieClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // C libraries, each wrapped by exactly one Swift target.
        .systemLibrary(name: "CSodium", path: "Sources/CSodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CLibPQ", path: "Sources/CLibPQ", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        // The core: plugin interface, router, errors, tenant context, store protocols. No NIO, no C.
        .target(name: "AerieCore", dependencies: [.product(name: "Logging", package: "swift-log")]),
        .target(name: "AerieCrypto", dependencies: ["AerieCore", "CSodium"]),
        .target(
            name: "AerieStore",
            dependencies: [
                "AerieCore", "CLibPQ",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // The TCP listening both servers share (bind, accept, stop accepting on shutdown).
        .target(
            name: "AerieListener",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "AerieTransport",
            dependencies: [
                "AerieCore", "AerieListener", "CCurl",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "AerieRPC",
            dependencies: [
                "AerieCore", "AerieListener",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "AerieClient",
            dependencies: [
                "AerieCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Wiring shared by the executables and the tests: configuration, admin methods, services.
        .target(
            name: "AerieServer",
            dependencies: [
                "AerieCore", "AerieCrypto", "AerieStore", "AerieRPC", "AerieTransport", "SystemPlugin",
                "ConnectionsPlugin", "DeletePlugin", "DiscoverFeaturesPlugin", "MessagesPlugin", "OutOfBandPlugin",
                "IssueCredentialPlugin",
                "PresentProofPlugin",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .target(
            name: "AerieTesting",
            dependencies: [
                "AerieServer", "AerieStore", "AerieClient", "AerieCore", "AerieCrypto", "AerieRPC", "AerieTransport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),

        // Protocol plugins: AerieCore and AerieCrypto only.
        .target(name: "SystemPlugin", dependencies: ["AerieCore"], path: "Plugins/SystemPlugin"),
        .target(name: "ConnectionsPlugin", dependencies: ["AerieCore", "AerieCrypto"], path: "Plugins/ConnectionsPlugin"),
        .target(name: "DeletePlugin", dependencies: ["AerieCore", "AerieCrypto"], path: "Plugins/DeletePlugin"),
        .target(name: "MessagesPlugin", dependencies: ["AerieCore", "AerieCrypto"], path: "Plugins/MessagesPlugin"),
        .target(
            name: "DiscoverFeaturesPlugin", dependencies: ["AerieCore", "AerieCrypto"], path: "Plugins/DiscoverFeaturesPlugin"),
        .target(name: "OutOfBandPlugin", dependencies: ["AerieCore", "AerieCrypto"], path: "Plugins/OutOfBandPlugin"),
        .target(name: "IssueCredentialPlugin", dependencies: ["AerieCore", "AerieCrypto"], path: "Plugins/IssueCredentialPlugin"),
        .target(name: "PresentProofPlugin", dependencies: ["AerieCore", "AerieCrypto"], path: "Plugins/PresentProofPlugin"),

        .executableTarget(
            name: "aerie-server",
            dependencies: [
                "AerieServer",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "aerie-admin",
            dependencies: [
                "AerieClient", "AerieCore", "AerieCrypto", "AerieServer", "AerieStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "aerie-bench",
            dependencies: [
                "AerieTesting", "AerieClient", "AerieCore", "AerieCrypto", "AerieServer", "AerieStore", "CSodium",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        .testTarget(name: "AerieCoreTests", dependencies: ["AerieCore", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "AerieCryptoTests", dependencies: ["AerieCrypto", "AerieCore"]),
        .testTarget(
            name: "AerieStoreTests",
            dependencies: ["AerieStore", "AerieCrypto", "AerieTesting", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "AerieRPCTests",
            dependencies: [
                "AerieRPC", "AerieCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "AerieTransportTests",
            dependencies: [
                "AerieTransport", "AerieCore", "AerieTesting",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ConnectionsPluginTests",
            dependencies: ["ConnectionsPlugin", "AerieCore", "AerieCrypto", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "DeletePluginTests", dependencies: ["DeletePlugin", "AerieCore", "AerieCrypto"]),
        .testTarget(name: "MessagesPluginTests", dependencies: ["MessagesPlugin", "AerieCore"]),
        .testTarget(name: "DiscoverFeaturesPluginTests", dependencies: ["DiscoverFeaturesPlugin", "AerieCore"]),
        .testTarget(name: "OutOfBandPluginTests", dependencies: ["OutOfBandPlugin", "AerieCore", "AerieCrypto"]),
        .testTarget(name: "IssueCredentialPluginTests", dependencies: ["IssueCredentialPlugin", "AerieCore", "AerieCrypto"]),
        .testTarget(name: "PresentProofPluginTests", dependencies: ["PresentProofPlugin", "AerieCore", "AerieCrypto"]),
        .testTarget(
            name: "AerieServerTests",
            dependencies: [
                "AerieTesting", "AerieClient", "AerieServer", "AerieCrypto", "AerieStore", "AerieCore", "AerieTransport",
                "ConnectionsPlugin", "DeletePlugin", "OutOfBandPlugin", "IssueCredentialPlugin",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ]
)

// libFuzzer targets (Fuzz/), only with AERIE_FUZZ=1: `scripts/fuzz` builds them into .build-fuzz
// with -sanitize=fuzzer, so the ordinary build never compiles or instruments them.
if ProcessInfo.processInfo.environment["AERIE_FUZZ"] == "1" {
    let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
        ("FuzzJSON", ["AerieCore"]),
        ("FuzzRPCEnvelope", ["AerieCore"]),
        ("FuzzInvitation", ["AerieCore", "ConnectionsPlugin"]),
        ("FuzzInvitationURL", ["AerieCore", "ConnectionsPlugin"]),
        ("FuzzEnvelope", ["AerieCrypto"]),
        ("FuzzEncodings", ["AerieCrypto"]),
    ]
    package.targets.append(.target(name: "CLibFuzzer", path: "Fuzz/CLibFuzzer"))
    for target in fuzzTargets {
        package.targets.append(
            .executableTarget(
                name: target.name, dependencies: target.dependencies + ["CLibFuzzer"], path: "Fuzz/\(target.name)"))
        package.products.append(.executable(name: target.name, targets: [target.name]))
    }
}
