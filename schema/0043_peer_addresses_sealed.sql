-- The columns that still held a peer's address in clear are sealed under the tenant's data key
-- (AerieStore's RowSealing, as schema/0018): a connection's DID (a did:peer:2/4 embeds the
-- peer's endpoint and keys) in `their_did_sealed`, an outbox row's endpoint and last error in
-- `endpoint_sealed` and `last_error_sealed`, and a sent message's delivery error in
-- `delivery_error_sealed` (they name the peer's URL). Each is a value of its own, bound to
-- (tenant, table, column, row), not a field of a row's `sealed` object: the mailbox download
-- joins the connection's DID to every message and opens only that, and a delivery failure writes
-- its error without reading the row. Nothing looks these up by value, so they need no lookup hash.
--
-- An outbox row keeps its destination (`scheme://host:port`, lower-cased, as
-- aerie.outbox_destination names it) in clear in `destination`: the delivery service's scan
-- across tenants (aerie.due_outbox) shares slots by it and holds no tenant's key. The path and
-- query of the endpoint, where a peer's URL carries its tokens, are sealed; the claim that
-- leases a row hands out its tenant's wrapped data key to open it.
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
    ADD COLUMN last_error_sealed bytea,
    ADD COLUMN endpoint_sealed bytea,
    ADD COLUMN destination text,
    ALTER COLUMN endpoint DROP NOT NULL;

DROP INDEX aerie.connections_clear;
CREATE INDEX connections_clear ON aerie.connections (tenant_id) WHERE sealed IS NULL OR their_did IS NOT NULL;
DROP INDEX aerie.mailbox_clear;
CREATE INDEX mailbox_clear ON aerie.mailbox (tenant_id) WHERE sealed IS NULL OR delivery_error IS NOT NULL;
CREATE INDEX outbox_clear ON aerie.outbox (tenant_id) WHERE endpoint IS NOT NULL OR last_error IS NOT NULL;

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
            UNION (SELECT DISTINCT tenant_id FROM aerie.outbox WHERE (endpoint IS NOT NULL OR last_error IS NOT NULL)
                AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
            UNION (SELECT DISTINCT tenant_id FROM aerie.oob_invitations WHERE sealed IS NULL AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
            UNION (SELECT DISTINCT tenant_id FROM aerie.tenant_settings WHERE sealed IS NULL AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
        ) t ORDER BY t.tenant_id LIMIT least(max_rows, 1000)
    $$;

-- A sent message's NOTIFY of its final status carries the reason in clear, as before, but the
-- row no longer holds it: the statement that fails the message sets it for the transaction
-- (`aerie.delivery_reason`, PostgresOutboxRepository.recordFailure).
CREATE OR REPLACE FUNCTION aerie.notify_delivery() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    pairwise text;
    notified text;
BEGIN
    SELECT c.my_did INTO pairwise FROM aerie.connections c
    WHERE c.tenant_id = NEW.tenant_id AND c.id = NEW.connection_id;
    notified := pg_notify('aerie_events', json_build_object(
        'tenant', NEW.tenant_id, 'kind', 'delivery', 'uid', NEW.uid, 'status', NEW.status,
        'type', left(NEW.type, 512), 'pairwiseDID', left(pairwise, 512),
        'reason', left(coalesce(NEW.delivery_error, NULLIF(current_setting('aerie.delivery_reason', true), '')), 500))::text);
    RETURN NULL;
END
$$;

-- A row's destination: its own column, or (a row the previous release wrote) its endpoint's.
CREATE OR REPLACE FUNCTION aerie.due_outbox(max_rows integer, busy_destinations text[])
    RETURNS TABLE (tenant_id uuid, id uuid, destination text)
    LANGUAGE plpgsql STABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    RETURN QUERY
        SELECT o.tenant_id, o.id, coalesce(o.destination, aerie.outbox_destination(o.endpoint), '') FROM aerie.outbox o
        WHERE o.status = 'pending' AND o.next_attempt_at <= now()
            AND coalesce(o.destination, aerie.outbox_destination(o.endpoint), '') <> ALL (busy_destinations)
        ORDER BY o.next_attempt_at LIMIT least(max_rows, 1000);
END
$$;

ALTER TABLE aerie.outbox NO FORCE ROW LEVEL SECURITY;
DELETE FROM aerie.outbox WHERE status = 'failed';
ALTER TABLE aerie.outbox FORCE ROW LEVEL SECURITY;
