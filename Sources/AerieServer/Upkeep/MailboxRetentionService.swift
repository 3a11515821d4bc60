import AerieCore
import AerieStore
import Foundation
import Logging
import ServiceLifecycle

/// Purges reviewed (`MS-106`) mailbox messages older than `AERIE_MESSAGE_RETENTION_DAYS`, tenant
/// by tenant under each tenant's row-level security, every `interval`. Pending messages are kept
/// however old: nobody has seen them yet.
struct MailboxRetentionService: Service {
    let database: AerieDatabase
    let retention: Duration
    let interval: Duration
    let logger: Logger

    static let tenantPage = 100
    static let batchSize = 1000

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let purged = try await purge(receivedBefore: Date().addingTimeInterval(-Self.seconds(retention)))
                    if purged > 0 { logger.info("purged reviewed mailbox messages", metadata: ["count": "\(purged)"]) }
                } catch {
                    logger.warning("mailbox retention sweep failed", metadata: ["error": "\(String(reflecting: error))"])
                }
                try await Task.sleep(for: interval)
            }
        }
    }

    /// One sweep over every tenant; returns how many messages went.
    func purge(receivedBefore cutoff: Date) async throws -> Int {
        var total = 0
        var after: TenantID? = nil
        while true {
            let tenants = try await database.tenants.list(after: after, limit: Self.tenantPage)
            for tenant in tenants {
                while true {
                    let removed = try await database.tenant(tenant.id).transaction { tx in
                        try tx.mailbox.purgeReviewed(receivedBefore: cutoff, limit: Self.batchSize)
                    }
                    total += removed
                    if removed < Self.batchSize { break }
                }
            }
            guard tenants.count == Self.tenantPage, let last = tenants.last else { return total }
            after = last.id
        }
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
