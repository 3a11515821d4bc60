import AerieCore
import AerieCrypto
import Foundation

extension ConnectionService {
    /// Answers an inbound ping of the connection's peer that asks for it (RFC 0048) with a
    /// `ping_response` through the one send path: stored, recorded and queued in one transaction,
    /// so a redelivered ping is answered once. The inbound pipeline only hands over pings packed
    /// by the connection's peer (`InboundSenders.peer`); a connection not established (or a ping
    /// without an `@id`) gets no answer, and the ping is stored as any message.
    func answerPing(_ message: InboundMessage, tenant: TenantContext) async throws {
        guard let connection = message.connection, message.sender == .peer, connection.isEstablished,
            TrustPing.responseRequested(message.body), let pingId = message.id
        else { return }
        let receipt = message.receipt
        _ = try await sender.send(TrustPing.response(to: pingId), on: connection.id, tenant: tenant) { current, tx in
            try receipt?.claim(in: tx, connection: current.id) ?? true
        }
    }

    /// A `ping_response` of the peer: stored with the connection, then this process's waiting
    /// `connections.ping` calls on it are woken (others find it in the store).
    func pingResponded(_ message: InboundMessage, tenant: TenantContext) async throws {
        guard let connection = message.connection else { return }
        _ = try await tenant.database.transaction { tx in try message.claim(in: tx) }
        waits.changed(connection, tenant: tenant.tenantID)
    }

    /// `connections.ping`: sends a ping asking for a response and waits (at most `timeout`) for
    /// the peer's `ping_response`, whichever server of the cluster it reaches: this process's
    /// handler wakes the wait, and the store is read every `waitPollInterval`.
    public func ping(_ id: UUID, timeout: Duration, tenant: TenantContext) async throws -> PingResult {
        guard let sent = try await sender.send(TrustPing.ping(), on: id, tenant: tenant) else {
            throw AerieError.internalError(details: "a ping without a condition sent nothing")
        }
        let messageId = sent.messageId
        let found = try await waitFor(id, timeout: timeout, tenant: tenant) {
            try await tenant.database.transaction { tx -> (MailboxMessage, MailboxMessage)? in
                guard let reply = try tx.mailbox.receivedReply(connectionId: id, threadId: messageId, type: TrustPing.responseType),
                    let ping = try tx.mailbox.get(sent.uid)
                else { return nil }
                return (ping, reply)
            }
        }
        guard let (ping, reply) = found else {
            throw AerieError(
                .timeout, "the peer did not answer the ping within \(timeout.components.seconds) s",
                data: [
                    "connectionId": .string(id.lowercasedString), "uid": .string(sent.uid.lowercasedString),
                    "@id": .string(messageId),
                ])
        }
        let milliseconds = (reply.receivedAt.timeIntervalSince(ping.receivedAt) * 1_000_000).rounded() / 1000
        return PingResult(
            connectionId: id.lowercasedString, uid: sent.uid.lowercasedString, messageId: messageId,
            responseUid: reply.uid.lowercasedString, roundTripMs: max(0, milliseconds))
    }

    /// Calls `check` until it answers something or `timeout` passed (nil): again whenever this
    /// process commits a change of the connection (or a message on it a caller waits for), and
    /// every `waitPollInterval` for what other processes commit.
    func waitFor<T: Sendable>(
        _ connectionId: UUID, timeout: Duration, tenant: TenantContext, check: @Sendable () async throws -> T?
    ) async throws -> T? {
        let watch = waits.watch(connectionId, tenant: tenant.tenantID)
        defer { waits.stop(watch) }
        let deadline = ContinuousClock.now + timeout
        while true {
            if let answer = try await check() { return answer }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            _ = await watch.next(timeout: min(left, Self.waitPollInterval))
            try Task.checkCancellation()
        }
    }
}
