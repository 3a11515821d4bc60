import AerieCore

/// The present-proof plugin's table: `aerie.proof_exchanges`, one row per proof request the
/// tenant answers as prover, its state changes logged and notified as events of kind
/// `present-proof`. Sealed (`RowSealing`); only ids, states, times and the thread's keyed hash
/// stay clear.
enum PresentProofSchema {
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

ALTER TABLE aerie.proof_exchanges ENABLE ROW LEVEL SECURITY;
ALTER TABLE aerie.proof_exchanges FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON aerie.proof_exchanges
    USING (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON aerie.proof_exchanges TO aerie_runtime;

-- Every new exchange and state change is an event (kind present-proof): logged for a tenant
-- with a backend (as schema/0035's triggers decide) and notified to the server processes.
CREATE FUNCTION aerie.proof_exchange_event() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    payload jsonb := jsonb_build_object('requestId', NEW.id, 'state', NEW.state, 'connectionId', NEW.connection_id);
    notified text;
BEGIN
    IF current_setting('aerie.tenant_logs', true) IS DISTINCT FROM 'off' THEN
        PERFORM aerie.log_event(NEW.tenant_id, 'present-proof', payload);
    END IF;
    notified := pg_notify('aerie_events',
        (jsonb_build_object('tenant', NEW.tenant_id, 'kind', 'present-proof') || payload)::text);
    RETURN NULL;
END
$$;
CREATE TRIGGER proof_exchanges_event AFTER INSERT ON aerie.proof_exchanges
    FOR EACH ROW EXECUTE FUNCTION aerie.proof_exchange_event();
CREATE TRIGGER proof_exchanges_state_event AFTER UPDATE ON aerie.proof_exchanges
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION aerie.proof_exchange_event();
GRANT EXECUTE ON FUNCTION aerie.proof_exchange_event() TO aerie_runtime;
"""#)
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
