import AerieCore
import Synchronization

/// Test-only methods registered through the ordinary plugin interface: a slow call (for
/// pipelining, disconnects and graceful shutdown) and a call that fails with a non-Aerie error.
struct ProbePlugin: AeriePlugin {
    static let name = "probe"

    /// How many `probe.track` calls run at once, and the most seen.
    final class Concurrency: Sendable {
        private let state = Mutex<(now: Int, most: Int)>((0, 0))
        var most: Int { state.withLock { $0.most } }
        func enter() { state.withLock { $0.now += 1; $0.most = max($0.most, $0.now) } }
        func leave() { state.withLock { $0.now -= 1 } }
    }

    var concurrency = Concurrency()

    struct SleepParams: Codable, Sendable {
        var milliseconds: Int
        var tag: Int?
    }

    struct Unexpected: Error {
        let secret = "SELECT * FROM aerie.tenants"
    }

    func register(with router: inout MethodRouter) throws {
        try router.register("probe.sleep", summary: "Sleeps, then echoes tag.", access: .anonymous) {
            (params: SleepParams, _) in
            try await Task.sleep(for: .milliseconds(min(params.milliseconds, 10_000)))
            return JSONValue.int(Int64(params.tag ?? 0))
        }
        let concurrency = self.concurrency
        try router.register("probe.track", summary: "Sleeps, counting the calls running at once.", access: .anonymous) {
            (params: SleepParams, _) in
            concurrency.enter()
            defer { concurrency.leave() }
            try await Task.sleep(for: .milliseconds(min(params.milliseconds, 10_000)))
            return JSONValue.int(Int64(params.tag ?? 0))
        }
        try router.register("probe.crash", summary: "Throws an unexpected error.", access: .anonymous) {
            (_: NoParams, _) -> JSONValue in
            throw Unexpected()
        }
        try router.register("probe.whoami", summary: "The tenant of the session.") {
            (_: NoParams, tenant: TenantContext) in tenant.tenantID.rawValue
        }
    }
}
