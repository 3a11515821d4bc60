import AerieCore
import Logging
import Metrics

/// Turns one request line into its response line: validation, authentication, access checks,
/// the handler call and error mapping. No I/O of its own, so it is tested without a socket.
struct RPCDispatcher: Sendable {
    let router: MethodRouter
    let authenticator: any SessionAuthenticator
    let configuration: RPCServerConfiguration
    let logger: Logger
    let serverVersion: String

    func parse(_ line: some Collection<UInt8>) -> RPCIncoming {
        RPCEnvelope.parse(line, maxBatchEntries: configuration.maxBatchEntries)
    }

    /// Whether later lines must wait for this one: `session.authenticate` changes who the
    /// session is, so a client may pipeline it with the calls that need it.
    static func isBarrier(_ incoming: RPCIncoming) -> Bool {
        func authenticates(_ entry: Result<RPCRequest, RPCInvalidRequest>) -> Bool {
            if case .success(let request) = entry { return request.method == "session.authenticate" }
            return false
        }
        switch incoming {
        case .single(let entry): return authenticates(entry)
        case .batch(let entries): return entries.contains(where: authenticates)
        case .parseError, .invalidBatch: return false
        }
    }

    /// The response's text (to be sent as one line), or nil when nothing is to be sent. The
    /// server starts a batch's entries itself, each in its own in-flight slot; here they run one
    /// after the other.
    func handle(_ incoming: RPCIncoming, session: RPCSession) async -> RPCResponseText? {
        switch incoming {
        case .parseError(let reason):
            return RPCResponseText(RPCEnvelope.error(id: .null, AerieError(.parseError, "parse error: \(reason)")).serialized())
        case .invalidBatch(let reason):
            return RPCResponseText(RPCEnvelope.error(id: .null, AerieError(.invalidRequest, reason)).serialized())
        case .single(let entry):
            return await respond(to: entry, session: session)
        case .batch(let entries):
            var responses: [RPCResponseText] = []
            for entry in entries {
                if let response = await respond(to: entry, session: session) { responses.append(response) }
            }
            return Self.batch(responses)
        }
    }

    /// The text of a batch's answer: its responses as one array; nil when there are none.
    static func batch(_ responses: [RPCResponseText]) -> RPCResponseText? {
        guard !responses.isEmpty else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(responses.reduce(2) { $0 + $1.byteCount + 1 })
        out.append(UInt8(ascii: "["))
        for (index, response) in responses.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            response.write(into: &out)
        }
        out.append(UInt8(ascii: "]"))
        return RPCResponseText(out)
    }

    /// One request (or one entry of a batch): its response's text, or nil for a notification.
    func respond(to entry: Result<RPCRequest, RPCInvalidRequest>, session: RPCSession) async -> RPCResponseText? {
        switch entry {
        case .failure(let invalid):
            return RPCResponseText(RPCEnvelope.error(id: invalid.id, AerieError(.invalidRequest, invalid.message)).serialized())
        case .success(let request):
            let started = ContinuousClock.now
            let outcome: Result<MethodResult, AerieError>
            defer { record(request, outcome, elapsed: ContinuousClock.now - started) }
            do {
                outcome = .success(try await call(request, session: session))
            } catch let error as AerieError {
                if error.code == .internalError {
                    logger.error("internal error", metadata: ["method": "\(request.method)", "error": "\(String(reflecting: error))"])
                }
                outcome = .failure(error)
            } catch is CancellationError {
                outcome = .failure(AerieError(.unavailable, "the server is shutting down"))
            } catch {
                logger.error("unexpected error", metadata: ["method": "\(request.method)", "error": "\(String(reflecting: error))"])
                outcome = .failure(AerieError(.internalError, "internal error"))
            }
            guard let id = request.id else { return nil }
            switch outcome {
            case .success(let result): return RPCEnvelope.result(id: id, result)
            case .failure(let error): return RPCResponseText(RPCEnvelope.error(id: id, error).serialized())
            }
        }
    }

    /// `aerie_rpc_calls_total{method, outcome}` and `aerie_rpc_call_duration_seconds{method}`.
    /// Only methods the router knows are named (others count as `unknown`), so a client cannot
    /// grow the label set; the outcome is `ok` or the error's stable code.
    private func record(_ request: RPCRequest, _ outcome: Result<MethodResult, AerieError>, elapsed: Duration) {
        let method = request.method == "rpc.discover" || router.method(named: request.method) != nil ? request.method : "unknown"
        let result: String
        switch outcome {
        case .success: result = "ok"
        case .failure(let error): result = error.code.name
        }
        calls(method, result).increment()
        durations(method).record(duration: elapsed)
    }

    private let calls = MetricHandles { values in
        Counter(label: "aerie_rpc_calls_total", dimensions: [("method", values[0]), ("outcome", values[1])])
    }
    private let durations = MetricHandles { values in
        Metrics.Timer(label: "aerie_rpc_call_duration_seconds", dimensions: [("method", values[0])])
    }

    private func call(_ request: RPCRequest, session: RPCSession) async throws -> MethodResult {
        if request.method == "rpc.discover" {
            return .value(router.openRPCDocument(title: "Aerie", version: serverVersion))
        }
        guard let method = router.method(named: request.method) else {
            throw AerieError(.methodNotFound, "method not found: \(request.method.prefix(100))")
        }
        let (params, actingFor) = try Self.splitMeta(request.params)
        var requestLogger = logger
        // Set at once: a handler may rework its whole metadata at each change (swift-log's
        // StreamLogHandler formats it anew), four times per call here. The tenant too, where it
        // is known now: `TenantContexts` leaves a logger that already names it as it is.
        var metadata = logger.handler.metadata
        metadata["request"] = "\(RequestID.make())"
        metadata["session"] = "\(session.id)"
        metadata["method"] = "\(method.name)"
        switch session.credential?.kind {
        case .tenant(let own)? where method.access == .tenant: metadata["tenant"] = "\(own)"
        case .backend? where method.access != .anonymous: if let actingFor { metadata["tenant"] = "\(actingFor)" }
        default: break
        }
        requestLogger.handler.metadata = metadata
        let principal: Principal
        switch method.access {
        case .anonymous:
            principal = .anonymous
        case .tenant, .admin, .adminOrBackend, .backend:
            guard let credential = session.credential else {
                throw AerieError(.unauthenticated, "call session.authenticate first")
            }
            switch (method.access, credential.kind) {
            case (.tenant, .admin):
                throw AerieError(.forbidden, "the admin token may call admin.* methods only")
            case (.admin, .tenant), (.adminOrBackend, .tenant), (.admin, .backend):
                throw AerieError(.forbidden, "this method needs the admin token")
            case (.backend, .tenant), (.backend, .admin):
                throw AerieError(.forbidden, "this method needs a backend session")
            case (.backend, .backend):
                if actingFor != nil {
                    throw AerieError.invalidParams("this method acts for the backend, not for one tenant", field: "_meta.tenantId")
                }
            case (.tenant, .backend):
                guard actingFor != nil else {
                    throw AerieError.invalidParams(
                        "a backend session names the tenant of each call in params._meta.tenantId", field: "_meta.tenantId")
                }
            case (.tenant, .tenant(let own)):
                if let actingFor, actingFor != own {
                    throw AerieError(.forbidden, "a tenant session acts for its own tenant only")
                }
            default: break
            }
            do {
                principal = try await authenticator.principal(
                    for: credential, actingFor: method.access == .tenant ? actingFor : nil, logger: requestLogger)
            } catch let error as AerieError where error.code == .unauthenticated {
                session.revoke(ifStill: credential.tokenHash)
                throw error
            }
        }
        let context = CallContext(principal: principal, logger: requestLogger, session: session)
        return try await method.handler(params, context)
    }

    /// Takes the reserved member `_meta` out of the params (the convention MCP uses for JSON-RPC
    /// metadata): `_meta.tenantId` names the tenant a backend session's call acts for. The
    /// method's own params never see it.
    static func splitMeta(_ params: JSONValue?) throws -> (JSONValue?, TenantID?) {
        guard case .object(var members)? = params, let meta = members.removeValue(forKey: "_meta") else { return (params, nil) }
        guard case .object(let metaMembers) = meta else {
            throw AerieError.invalidParams("_meta must be an object", field: "_meta")
        }
        for key in metaMembers.keys where key != "tenantId" {
            throw AerieError.invalidParams("unknown member _meta.\(key.prefix(64))", field: "_meta")
        }
        guard let raw = metaMembers["tenantId"] else { return (.object(members), nil) }
        guard let text = raw.stringValue, let tenant = TenantID(text) else {
            throw AerieError.invalidParams("_meta.tenantId must be a tenant id (UUID)", field: "_meta.tenantId")
        }
        return (.object(members), tenant)
    }
}
