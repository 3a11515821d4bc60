-- The columns that still held a peer's address in clear are sealed under the tenant's data key
-- (AerieStore's RowSealing, as schema/0018): a connection's DID (a did:peer:2/4 embeds the
-- peer's endpoint and keys) in `their_did_sealed`, an outbox row's last error in
-- `last_error_sealed` and a sent message's delivery error in `delivery_error_sealed` (both name
-- the peer's URL). Each is a value of its own, bound to (tenant, table, column, row), not a field
-- of the row's `sealed` object: the mailbox download joins the connection's DID to every message
-- and opens only that, and a delivery failure writes its error without reading the row.
-- Nothing looks these up by value, so they need no lookup hash.
--
-- Rows written before this release keep their clear values until the server's
-- SealingMigrationService rewrites them: it now also finds rows whose `sealed` is set but whose
-- DID or error is still clear. No CHECK forbids the clear columns: a server of the previous
-- release still writes them during a rolling upgrade, and the sweep catches what it wrote.
--
-- An outbox row that failed for good is deleted with its message's final status (MS-105), as a
-- delivered one is (schema/0032): the ones kept so far go now.

ALTER TABLE aerie.connections
    ADD COLUMN their_did_sealed bytea;

ALTER TABLE aerie.mailbox
    ADD COLUMN delivery_error_sealed bytea;

ALTER TABLE aerie.outbox
    ADD COLUMN last_error_sealed bytea;

DROP INDEX aerie.connections_clear;
CREATE INDEX connections_clear ON aerie.connections (tenant_id) WHERE sealed IS NULL OR their_did IS NOT NULL;
DROP INDEX aerie.mailbox_clear;
CREATE INDEX mailbox_clear ON aerie.mailbox (tenant_id) WHERE sealed IS NULL OR delivery_error IS NOT NULL;
CREATE INDEX outbox_clear ON aerie.outbox (tenant_id) WHERE last_error IS NOT NULL;

ALTER POLICY owner_clear_lookup ON aerie.connections USING (sealed IS NULL OR their_did IS NOT NULL);
ALTER POLICY owner_clear_lookup ON aerie.mailbox USING (sealed IS NULL OR delivery_error IS NOT NULL);
-- The owner reads the outbox through owner_due_lookup (schema/0003) already.

CREATE OR REPLACE FUNCTION aerie.tenants_with_clear_rows(after_tenant uuid, max_rows integer)
    RETURNS TABLE (tenant_id uuid)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
        SELECT t.tenant_id FROM (
            (SELECT DISTINCT tenant_id FROM aerie.connections WHERE (sealed IS NULL OR their_did IS NOT NULL)
                AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
            UNION (SELECT DISTINCT tenant_id FROM aerie.mailbox WHERE (sealed IS NULL OR delivery_error IS NOT NULL)
                AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
            UNION (SELECT DISTINCT tenant_id FROM aerie.outbox WHERE last_error IS NOT NULL
                AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
            UNION (SELECT DISTINCT tenant_id FROM aerie.oob_invitations WHERE sealed IS NULL AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
            UNION (SELECT DISTINCT tenant_id FROM aerie.tenant_settings WHERE sealed IS NULL AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
        ) t ORDER BY t.tenant_id LIMIT least(max_rows, 1000)
    $$;

ALTER TABLE aerie.outbox NO FORCE ROW LEVEL SECURITY;
DELETE FROM aerie.outbox WHERE status = 'failed';
ALTER TABLE aerie.outbox FORCE ROW LEVEL SECURITY;
