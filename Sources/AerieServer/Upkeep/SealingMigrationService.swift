import AerieCore
import AerieStore
import Logging
import ServiceLifecycle

/// The upgrade's background re-encryption (issue 15): rewrites rows still in the previous
/// release's clear form sealed under their tenant's data key, tenant by tenant, in batches of
/// `batchSize` rows per table, one short transaction each. Resumable by construction: progress
/// is the rows themselves (`sealed IS NULL` is what is left), so a restart, a crash or a second
/// server just picks up what remains (`FOR UPDATE SKIP LOCKED`: two servers never fight over a
/// row). Needs each tenant's data key, so it runs in the server (master key in hand). It sweeps at
/// start and then every `interval`, which also catches rows a not-yet-upgraded server writes
/// during a rolling upgrade; a sweep with nothing to do is one indexed query.
struct SealingMigrationService: Service {
    let database: AerieDatabase
    let contexts: TenantContexts
    var interval: Duration = .seconds(60)
    var batchSize = 200
    let logger: Logger

    static let tenantPage = 100

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let sealed = try await sweep()
                    if sealed > 0 { logger.info("sealed rows of the previous clear form", metadata: ["count": "\(sealed)"]) }
                } catch {
                    logger.warning("sealing sweep failed", metadata: ["error": "\(String(reflecting: error))"])
                }
                try await Task.sleep(for: interval)
            }
        }
    }

    /// One sweep over every tenant with clear rows, in tenant id order; a tenant whose rows cannot
    /// be sealed (its key does not unwrap) is logged and left for the next sweep. Returns how many
    /// rows it sealed.
    func sweep() async throws -> Int {
        var total = 0
        var after: TenantID? = nil
        while !Task.isCancelled {
            let tenants = try await database.tenantsWithClearRows(after: after, limit: Self.tenantPage)
            for id in tenants where !Task.isCancelled {
                total += try await seal(id)
            }
            guard tenants.count == Self.tenantPage, let last = tenants.last else { break }
            after = last
        }
        return total
    }

    /// Seals one tenant's clear rows, batch after batch; answers how many.
    private func seal(_ id: TenantID) async throws -> Int {
        // A tenant deleted meanwhile took its rows with it.
        guard let wrapped = try await database.tenants.wrappedDataKey(id) else { return 0 }
        let tenant = contexts.context(for: id, wrappedDataKey: wrapped, logger: logger)
        var total = 0
        do {
            while !Task.isCancelled {
                let sealed = try await tenant.database.transaction { [batchSize] in try $0.sealClearRows(limit: batchSize) }
                total += sealed
                if sealed == 0 { break }
            }
        } catch {
            logger.warning(
                "cannot seal this tenant's clear rows", metadata: ["tenant": "\(id)", "error": "\(String(reflecting: error))"])
        }
        return total
    }
}
