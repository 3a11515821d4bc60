import Foundation

/// What the exchange protocols a tenant answers a peer in (issue-credential 2.0 as holder,
/// present-proof 2.0 as prover) do alike, named by their family: take messages from the
/// connection's peer only, read ids and threads within `PeerFieldLimits`, refuse with an
/// `AerieError` carrying the problem-report code the peer is told, and write and read that
/// problem report.
package struct ExchangeProtocol: Sendable {
    /// As a message names it: `issue-credential`, `present-proof`.
    package let name: String
    /// `https://didcomm.org/<name>/<version>/`.
    package let family: String
    /// The code when no refusal's code fits (`issuance-abandoned`, `presentation-abandoned`).
    package let abandonedCode: String

    package init(name: String, version: String, abandonedCode: String) {
        self.name = name
        self.family = InboundMessage.didcommPrefix + name + "/" + version + "/"
        self.abandonedCode = abandonedCode
    }

    package var problemReportType: String { family + "problem-report" }

    // MARK: - Refusals

    /// A message or attachment that is not what its RFC describes, or over a bound.
    package static func malformed(_ message: String, field: String) -> AerieError {
        AerieError(.invalidParams, message, field: field, data: ["problemCode": "malformed-message"])
    }

    /// No attachment in a format Aerie reads.
    package static func unsupportedFormat(_ message: String) -> AerieError {
        AerieError(.invalidParams, message, field: "formats", data: ["problemCode": "unsupported-format"])
    }

    /// The problem-report code for `error`: its own, else `abandonedCode`.
    package func problemCode(_ error: any Error) -> String {
        (error as? AerieError)?.data["problemCode"]?.stringValue ?? abandonedCode
    }

    /// What the peer and the tenant are told of `error` (an `AerieError`'s safe message only).
    package static func describe(_ error: any Error) -> String {
        (error as? AerieError)?.message ?? "the message could not be handled"
    }

    // MARK: - Reading

    package static func newId() -> String { UUID.random().lowercasedString }

    package static func id(of message: JSONValue) throws -> String {
        guard let id = message["@id"]?.stringValue, !id.isEmpty else { throw malformed("the message has no @id", field: "@id") }
        if let violation = PeerFieldLimits.id.violation(id, name: "@id") { throw malformed(violation, field: "@id") }
        return id
    }

    /// `~thread.thid` and `~thread.pthid`, each bounded as an id.
    package static func threadIds(of message: JSONValue) throws -> (thid: String?, pthid: String?) {
        guard let thread = message["~thread"] else { return (nil, nil) }
        guard case .object = thread else { throw malformed("~thread must be an object", field: "~thread") }
        let thid = try thread["thid"].flatMap { try text($0, field: "~thread.thid", limits: .id) }
        let pthid = try thread["pthid"].flatMap { try text($0, field: "~thread.pthid", limits: .id) }
        return (thid, pthid)
    }

    /// A string member within `limits` (null: none).
    package static func text(_ value: JSONValue, field: String, limits: PeerFieldLimits = .text) throws -> String? {
        if case .null = value { return nil }
        guard let string = value.stringValue else { throw malformed("\(field) must be a string", field: field) }
        if let violation = limits.violation(string, name: field) { throw malformed(violation, field: field) }
        return string
    }

    /// A peer's problem report: its thread, and its `description.code` (within `codeLimits`) and
    /// `description.en`, each when present.
    package static func readProblemReport(_ message: JSONValue, codeLimits: PeerFieldLimits, noThread: String) throws
        -> (threadId: String, code: String?, english: String?)
    {
        guard let thid = try threadIds(of: message).thid else { throw malformed(noThread, field: "~thread.thid") }
        let description = message["description"]
        let code = try description?["code"].flatMap { try text($0, field: "description.code", limits: codeLimits) }
        let english = try description?["en"].flatMap { try text($0, field: "description.en") }
        return (thid, code, english)
    }

    // MARK: - Writing

    /// The family's problem report on `threadId`.
    package func problemReport(threadId: String, code: String, description: String, id: String = newId()) -> JSONValue {
        [
            "@type": .string(problemReportType), "@id": .string(id), "~thread": ["thid": .string(threadId)],
            "description": ["en": .string(description), "code": .string(code)],
        ]
    }

    // MARK: - Driving

    /// The connection of a message its peer sent: an exchange is taken from nobody else (the
    /// endpoint authenticated the sender against the connection).
    package func peerConnection(_ inbound: InboundMessage) throws -> ConnectionRecord {
        guard let connection = inbound.connection, inbound.sender == .peer else {
            throw InboundSender.Refused("\(name) messages are taken only from a connection's peer")
        }
        return connection
    }

    /// A peer's message that opens or moves an exchange: `read` from its body, then `record`ed in
    /// a transaction that claims it (a redelivered copy is not recorded twice). One that cannot be
    /// read, or that would pass `OpenExchangeLimits`, is answered with `report` instead.
    package func receive<Read: Sendable>(
        _ inbound: InboundMessage, connection: ConnectionRecord, tenant: TenantContext, sender: any ConnectionSender,
        read: (JSONValue) throws -> Read, record: @escaping @Sendable (Read, any TenantTransaction) throws -> Void
    ) async throws {
        let message: Read
        do {
            message = try read(inbound.body)
        } catch {
            try await report(error, on: inbound, connection: connection, tenant: tenant, sender: sender)
            return
        }
        do {
            try await tenant.database.transaction { tx in
                if let receipt = inbound.receipt, try !receipt.claim(in: tx, connection: connection.id) { return }
                try record(message, tx)
            }
        } catch let error as AerieError where OpenExchangeLimits.isRefusal(error) {
            try await report(error, on: inbound, connection: connection, tenant: tenant, sender: sender)
        }
    }

    /// A peer's message refused before any exchange changed: a problem report on its thread,
    /// queued in the transaction that claims the message (nothing else is stored), so the peer
    /// learns why. Rethrows `error` when the message names no usable thread.
    package func report(
        _ error: any Error, on inbound: InboundMessage, connection: ConnectionRecord, tenant: TenantContext,
        sender: any ConnectionSender
    ) async throws {
        let thread = (try? Self.threadIds(of: inbound.body).thid) ?? inbound.id
        guard let thread, PeerFieldLimits.id.violation(thread, name: "") == nil else { throw error }
        let message = problemReport(threadId: thread, code: problemCode(error), description: Self.describe(error))
        _ = try await sender.send(message, on: connection.id, tenant: tenant) { _, tx in
            if let receipt = inbound.receipt { return try receipt.claim(in: tx, connection: connection.id) }
            return true
        }
    }
}
