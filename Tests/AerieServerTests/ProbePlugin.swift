import AerieCore

/// Test-only methods registered through the ordinary plugin interface: a slow call (for
/// pipelining, disconnects and graceful shutdown) and a call that fails with a non-Aerie error.
struct ProbePlugin: AeriePlugin {
    static let name = "probe"

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
        try router.register("probe.crash", summary: "Throws an unexpected error.", access: .anonymous) {
            (_: NoParams, _) -> JSONValue in
            throw Unexpected()
        }
        try router.register("probe.whoami", summary: "The tenant of the session.") {
            (_: NoParams, tenant: TenantContext) in tenant.tenantID.rawValue
        }
    }
}
