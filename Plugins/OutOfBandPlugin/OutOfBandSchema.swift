import AerieCore

/// The out-of-band plugin's table, `aerie.oob_invitations`, and what the store needs to know of it.
/// Its first migration is version 6, as when it was `schema/0006_out_of_band.sql`: databases that
/// applied that file record version 6 and do not run it again. (schema/0018, a core migration
/// written before the plugin owned its table, adds the table's `sealed` column and keyed hash and
/// lists it in `aerie.tenants_with_clear_rows`; it runs after version 6 in the merged order.)
enum OutOfBandSchema {
    static let migrations = [
        SchemaMigration(
            version: 6, name: "out_of_band",
            sql: #"""
-- Out-of-band invitations a tenant accepted (RFC 0434, invitee role): one row per invitation
-- @id, so the same invitation scanned twice is recognised, and a handshake-reuse-accepted is
-- matched to its invitation by ~thread.pthid. Tenant-owned: tenant_id leads the key, row-level
-- security as in 0001.

CREATE TABLE aerie.oob_invitations (
    tenant_id           uuid        NOT NULL REFERENCES aerie.tenants (id),
    id                  uuid        NOT NULL,
    invitation_id       text        NOT NULL,
    -- the connection made, reused or used for the attached message
    connection_id       uuid,
    -- the decision-table row taken (seed 004), 1...8
    decision_row        int         NOT NULL CHECK (decision_row BETWEEN 1 AND 8),
    state               text        NOT NULL
                                    CHECK (state IN ('connecting', 'reuse-sent', 'reused', 'done', 'failed')),
    -- the handshake-reuse @id (the thread the answer carries as thid)
    reuse_message_id    text,
    -- the attached request, decoded, and where it went in the mailbox
    attached_message    jsonb,
    attached_message_uid uuid,
    failure_reason      text,
    invitation          jsonb       NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, invitation_id)
);

CREATE INDEX oob_invitations_connection ON aerie.oob_invitations (tenant_id, connection_id);

ALTER TABLE aerie.oob_invitations ENABLE ROW LEVEL SECURITY;
ALTER TABLE aerie.oob_invitations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON aerie.oob_invitations
    USING (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON aerie.oob_invitations TO aerie_runtime;
"""#),
    ]

    static let storage = PluginStorage(
        migrations: migrations,
        repositories: [RepositoryProvider(OutOfBandRepository.self) { OutOfBandStore($0) }],
        connectionData: [
            // The out-of-band invitations accepted with the connection.
            ConnectionData(kind: OutOfBandStore.table) { tx, record in
                try OutOfBandStore(tx).deleteAll(connectionId: record.id)
            }
        ],
        sealClearRows: { tx, limit in try OutOfBandStore(tx).sealClearRows(limit: limit) },
        sealedTables: [
            SealedTable(
                OutOfBandStore.table, row: "id", values: [SealedTable.sealedObject],
                hashes: [SealedTable.LookupHash("invitation_id_hash", hashedAs: "invitation_id", field: "invitationId")])
        ])
}
