import AerieCore

/// The issue-credential plugin's tables: `aerie.credential_exchanges` (one row per exchange, its
/// state changes logged and notified as events of kind `issue-credential`) and
/// `aerie.stored_credentials` (the credentials the tenant holds, `CredentialRepository`). Both
/// sealed (`RowSealing`); only ids, states, times and keyed hashes stay clear.
enum IssueCredentialSchema {
    /// What each exchange event carries (`jsonb_build_object` arguments over `NEW`).
    static let eventPayload =
        "'exchangeId', NEW.id, 'state', NEW.state, 'connectionId', NEW.connection_id, 'credentialId', NEW.credential_id"

    static let migrations = [
        SchemaMigration(
            version: 53, name: "credential_exchanges",
            sql: #"""
-- Issue-credential 2.0 exchanges of a tenant as holder (RFC 0453). A thread is found by the keyed
-- hash of its ~thread.thid on its connection: two issuers choosing the same thread id do not meet.
CREATE TABLE aerie.credential_exchanges (
    tenant_id       uuid        NOT NULL REFERENCES aerie.tenants (id),
    id              uuid        NOT NULL,
    connection_id   uuid,
    thread_hash     bytea       NOT NULL,
    state           text        NOT NULL CHECK (state IN ('proposal-sent', 'offer-received', 'request-sent',
                                                          'credential-received', 'done', 'abandoned')),
    credential_id   uuid,
    -- thread id, parent thread id, comment, offer, request, holder DID, problem
    sealed          bytea       NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX credential_exchanges_thread ON aerie.credential_exchanges (tenant_id, connection_id, thread_hash);
CREATE INDEX credential_exchanges_connection ON aerie.credential_exchanges (tenant_id, connection_id);

\#(ExchangeSchema.tenantIsolation("credential_exchanges"))

-- Every new exchange and state change is an event (kind issue-credential).
\#(ExchangeSchema.stateEvents(
    table: "credential_exchanges", function: "credential_exchange_event", kind: "issue-credential", payload: eventPayload))
"""#),
        SchemaMigration(
            version: 54, name: "stored_credentials",
            sql: #"""
-- Credentials a tenant holds (W3C JSON-LD, verified before they are stored). The issuer and the
-- types are filtered by keyed hashes; the credential itself is sealed. A credential outlives the
-- connection it came over (connection_id is only a note); deleting the tenant destroys the key.
CREATE TABLE aerie.stored_credentials (
    tenant_id       uuid        NOT NULL REFERENCES aerie.tenants (id),
    id              uuid        NOT NULL,
    connection_id   uuid,
    exchange_id     uuid,
    issuer_hash     bytea       NOT NULL,
    type_hashes     text[]      NOT NULL, -- hex keyed hashes of the types
    -- credential, issuer, types, subject id, issuance and expiration dates
    sealed          bytea       NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX stored_credentials_issuer ON aerie.stored_credentials (tenant_id, issuer_hash);

\#(ExchangeSchema.tenantIsolation("stored_credentials"))
"""#),
        SchemaMigration(
            version: 63, name: "credential_exchanges_open",
            sql: #"""
\#(ExchangeSchema.openIndex("credential_exchanges"))
"""#),
        SchemaMigration(
            version: 72, name: "credential_exchange_events_logged",
            sql: #"""
-- The exchange events of a tenant with a backend are logged as every other event is: the first
-- trigger function called aerie.log_event, which schema/0027 had dropped, so such a tenant's
-- exchanges failed.
\#(ExchangeSchema.eventFunction("credential_exchange_event", kind: "issue-credential", payload: eventPayload))
"""#),
    ]

    static let storage = PluginStorage(
        migrations: migrations,
        repositories: [
            RepositoryProvider(CredentialRepository.self) { CredentialStore($0) },
            RepositoryProvider(CredentialExchangeRepository.self) { CredentialExchangeStore($0) },
        ],
        connectionData: [
            // The connection's exchanges go with it; the credentials it brought stay, unlinked.
            ConnectionData(kind: CredentialExchangeStore.table) { tx, record in
                try CredentialStore(tx).unlink(connectionId: record.id)
                return try CredentialExchangeStore(tx).deleteAll(connectionId: record.id)
            }
        ],
        sealedTables: [
            SealedTable(
                CredentialExchangeStore.table, row: "id", values: [SealedTable.sealedObject],
                hashes: [SealedTable.LookupHash("thread_hash", hashedAs: "thread_id", field: "threadId")]),
            SealedTable(
                CredentialStore.table, row: "id", values: [SealedTable.sealedObject],
                hashes: [
                    SealedTable.LookupHash("issuer_hash", hashedAs: "issuer", field: "issuer"),
                    SealedTable.LookupHash("type_hashes", hashedAs: "type", field: "types"),
                ]),
        ])
}
