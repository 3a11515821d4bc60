import AerieCore

/// The present-proof plugin's table: `aerie.proof_exchanges`, one row per proof request the
/// tenant answers as prover, its state changes logged and notified as events of kind
/// `present-proof`. Sealed (`RowSealing`); only ids, states, times and the thread's keyed hash
/// stay clear.
enum PresentProofSchema {
    /// What each exchange event carries (`jsonb_build_object` arguments over `NEW`).
    static let eventPayload = "'requestId', NEW.id, 'state', NEW.state, 'connectionId', NEW.connection_id"

    static let migrations = [
        SchemaMigration(
            version: 56, name: "proof_exchanges",
            sql: #"""
-- Present-proof 2.0 exchanges of a tenant as prover (RFC 0454). A thread is found by the keyed
-- hash of its ~thread.thid on its connection: two verifiers choosing the same thread id do not meet.
CREATE TABLE aerie.proof_exchanges (
    tenant_id       uuid        NOT NULL REFERENCES aerie.tenants (id),
    id              uuid        NOT NULL,
    connection_id   uuid,
    thread_hash     bytea       NOT NULL,
    state           text        NOT NULL CHECK (state IN ('request-received', 'presentation-sent', 'done', 'abandoned')),
    -- thread ids, comment, definition, challenge, domain, suite, what was presented, holder, problem
    sealed          bytea       NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX proof_exchanges_thread ON aerie.proof_exchanges (tenant_id, connection_id, thread_hash);
CREATE INDEX proof_exchanges_connection ON aerie.proof_exchanges (tenant_id, connection_id);

\#(ExchangeSchema.tenantIsolation("proof_exchanges"))

-- Every new exchange and state change is an event (kind present-proof).
\#(ExchangeSchema.stateEvents(
    table: "proof_exchanges", function: "proof_exchange_event", kind: "present-proof", payload: eventPayload))
"""#),
        SchemaMigration(
            version: 64, name: "proof_exchanges_open",
            sql: #"""
\#(ExchangeSchema.openIndex("proof_exchanges"))
"""#),
        SchemaMigration(
            version: 73, name: "proof_exchange_events_logged",
            sql: #"""
-- The exchange events of a tenant with a backend are logged as every other event is: the first
-- trigger function called aerie.log_event, which schema/0027 had dropped, so such a tenant's
-- exchanges failed.
\#(ExchangeSchema.eventFunction("proof_exchange_event", kind: "present-proof", payload: eventPayload))
"""#),
    ]

    static let storage = PluginStorage(
        migrations: migrations,
        repositories: [RepositoryProvider(ProofExchangeRepository.self) { ProofExchangeStore($0) }],
        connectionData: [
            ConnectionData(kind: ProofExchangeStore.table) { tx, record in
                try ProofExchangeStore(tx).deleteAll(connectionId: record.id)
            }
        ],
        sealedTables: [
            SealedTable(
                ProofExchangeStore.table, row: "id", values: [SealedTable.sealedObject],
                hashes: [SealedTable.LookupHash("thread_hash", hashedAs: "thread_id", field: "threadId")])
        ])
}
