import AerieCore
import Logging
import Testing

struct EchoParams: Codable, Sendable {
    var text: String
    var count: Int?
}

struct ProbePlugin: AeriePlugin {
    static let name = "probe"
    func register(with router: inout MethodRouter) throws {
        try router.register("probe.echo", summary: "echo", access: .anonymous) { (p: EchoParams, _) in p }
        try router.registerInbound("https://didcomm.org/trust_ping/1.0/ping") { _, _ in }
    }
}

struct OtherPlugin: AeriePlugin {
    static let name = "other"
    func register(with router: inout MethodRouter) throws {
        try router.registerInbound("did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/trust_ping/1.0/ping") { _, _ in }
    }
}

struct NullSession: SessionHandle {
    let id: UInt64 = 0
    func notify(method: String, params: JSONValue) -> Bool { false }
}

@Suite(.timeLimit(.minutes(10))) struct MethodRouterTests {
    let context = CallContext(principal: .anonymous, logger: Logger(label: "test"), session: NullSession())

    @Test func registersAndCallsTypedHandler() async throws {
        var router = MethodRouter()
        try router.install(ProbePlugin())
        let method = try #require(router.method(named: "probe.echo"))
        #expect(method.plugin == "probe")
        let result = try await method.handler(["text": "hi", "count": 3], context).value
        #expect(result == ["text": "hi", "count": 3])
    }

    @Test func duplicateMethodIsAStartupError() throws {
        var router = MethodRouter()
        try router.install(ProbePlugin())
        #expect(throws: RouterError.self) { try router.install(ProbePlugin()) }
    }

    @Test func eachEventKindHasOnePresenter() throws {
        struct Presenter: AeriePlugin {
            static let name = "presenter"
            func register(with router: inout MethodRouter) throws {}
            func register(presenters: inout EventPresenterRegistry) throws {
                try presenters.presentEvents(ofKind: "thing") { data in
                    data["id"].map { EventPresentation(pushMethod: "things.changed", fields: ["id": $0]) }
                }
            }
        }
        var registry = EventPresenterRegistry()
        try registry.install(Presenter())
        let error = #expect(throws: RouterError.self) { try registry.install(Presenter()) }
        #expect(error?.message == "event kind 'thing' is presented twice (the second by 'presenter')")
        var router = MethodRouter()
        try router.install(Presenter())
        #expect(router.methods.isEmpty && router.inbound.isEmpty, "presenting is not routing")

        let presenters = EventPresenters()
        #expect(presenters.present(kind: "thing", data: ["id": "a"]) == nil, "nothing is presented before the registry is installed")
        presenters.install(registry)
        #expect(presenters.present(kind: "thing", data: ["id": "a"]) == EventPresentation(pushMethod: "things.changed", fields: ["id": "a"]))
        #expect(presenters.present(kind: "thing", data: ["other": "a"]) == nil)
        #expect(presenters.present(kind: "unknown", data: ["id": "a"]) == nil)
    }

    @Test func legacyPrefixCollidesWithModernPrefix() throws {
        var router = MethodRouter()
        try router.install(ProbePlugin())
        let error = #expect(throws: RouterError.self) { try router.install(OtherPlugin()) }
        #expect(error?.message.contains("probe") == true)
        #expect(router.inboundRoute(for: "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/trust_ping/1.0/ping")?.plugin == "probe")
    }

    @Test func badParamsNameTheField() async throws {
        var router = MethodRouter()
        try router.install(ProbePlugin())
        let method = try #require(router.method(named: "probe.echo"))
        await #expect {
            _ = try await method.handler(["count": 1], context)
        } throws: { error in
            let e = error as? AerieError
            return e?.code == .invalidParams && e?.field == "text"
        }
        await #expect {
            _ = try await method.handler(["text": 5], context)
        } throws: { error in (error as? AerieError)?.field == "text" }
        await #expect {
            _ = try await method.handler([1, 2], context)
        } throws: { error in (error as? AerieError)?.field == "params" }
    }

    @Test func openRPCListsEveryMethod() throws {
        var router = MethodRouter()
        try router.install(ProbePlugin())
        let doc = router.openRPCDocument(title: "Aerie", version: "0")
        #expect(doc["openrpc"] == "1.2.6")
        guard case .array(let methods)? = doc["methods"] else { Issue.record("no methods"); return }
        #expect(methods.compactMap { $0["name"]?.stringValue } == ["probe.echo"])
    }

    @Test func errorCodesMapToTheContract() {
        #expect(AerieError.Code.unauthenticated.rpcCode == -32001)
        #expect(AerieError.Code.notFound.rpcCode == -32004)
        #expect(AerieError.Code.invalidInvitation.rpcCode == -32010)
        #expect(AerieError.Code.timeout.rpcCode == -32021)
        #expect(AerieError.Code.invalidParams.name == "invalid_params")
    }
}
