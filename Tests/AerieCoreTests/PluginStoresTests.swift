import AerieCore
import Testing

/// What `PluginStores` refuses at start-up; lookups against a real database are in
/// AerieServerTests' `PluginStorageTests`.
@Suite(.timeLimit(.minutes(10))) struct PluginStoresTests {
    protocol ExampleRepository {}
    struct Example: ExampleRepository {}

    static func storage(kind: String? = nil) -> PluginStorage {
        PluginStorage(
            repositories: [RepositoryProvider(ExampleRepository.self) { _ in Example() }],
            connectionData: kind.map { [ConnectionData(kind: $0) { _, _ in 0 }] } ?? [])
    }

    @Test func aRepositoryProvidedTwiceStopsStartUp() {
        #expect {
            try PluginStores([(name: "a", storage: Self.storage(), enabled: true), (name: "b", storage: Self.storage(), enabled: false)])
        } throws: { error in
            "\(error)".contains("ExampleRepository") && "\(error)".contains("'a'") && "\(error)".contains("'b'")
        }
    }

    @Test func aConnectionDataKindNamedTwiceStopsStartUp() throws {
        let one = try PluginStores([(name: "a", storage: Self.storage(kind: "a_rows"), enabled: false)])
        #expect(one.connectionData.map(\.kind) == ["a_rows"], "a disabled plugin's kinds still count")
        for taken in ["mailbox", "connections"] {
            #expect(throws: RouterError.self) {
                try PluginStores([(name: "a", storage: PluginStorage(connectionData: [ConnectionData(kind: taken) { _, _ in 0 }]), enabled: true)])
            }
        }
        #expect(throws: RouterError.self) {
            try PluginStores([
                (name: "a", storage: PluginStorage(connectionData: [ConnectionData(kind: "x") { _, _ in 0 }]), enabled: true),
                (name: "b", storage: PluginStorage(connectionData: [ConnectionData(kind: "x") { _, _ in 0 }]), enabled: true),
            ])
        }
    }
}
