-- What the database spends per connection, third pass (issue 16 goal 1; docs/BENCHMARKS.md,
-- branch pgflow). Nothing any reader, listener or quota sees changes.
--
-- 1. An outbox row marked sent (or failed for good) fired two row triggers, each a PL/pgSQL
--    call: the usage count (aerie.count_outbox) and the delivery event (aerie.record_event).
--    One trigger does both now (aerie.outbox_delivery_ended), in the same order: the count
--    first, then the event row and its NOTIFY. Retries (pending -> pending) fire nothing, as
--    before; a pending row deleted still goes through count_outbox's DELETE trigger.

CREATE FUNCTION aerie.outbox_delivery_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    payload jsonb;
BEGIN
    IF OLD.status = 'pending' THEN
        UPDATE aerie.tenant_usage SET outbox_pending = greatest(outbox_pending - 1, 0) WHERE tenant_id = OLD.tenant_id;
    END IF;
    IF NEW.status IN ('sent', 'failed') AND OLD.status IS DISTINCT FROM NEW.status THEN
        payload := jsonb_build_object(
            'outboxId', NEW.id, 'connectionId', NEW.connection_id, 'status', NEW.status, 'messageUid', NEW.message_uid);
        INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
        SELECT t.id, t.backend_id, 'delivery', payload FROM aerie.tenants t WHERE t.id = NEW.tenant_id;
        PERFORM pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', 'delivery') || payload)::text);
    END IF;
    RETURN NULL;
END
$$;

GRANT EXECUTE ON FUNCTION aerie.outbox_delivery_ended() TO aerie_runtime;

DROP TRIGGER outbox_count_done ON aerie.outbox;
DROP TRIGGER outbox_log_delivery ON aerie.outbox;
-- The union of the two triggers' conditions: pending -> anything else (the count), or a status
-- change to sent or failed (the event).
CREATE TRIGGER outbox_delivery_ended AFTER UPDATE OF status ON aerie.outbox
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND (OLD.status = 'pending' OR NEW.status IN ('sent', 'failed')))
    EXECUTE FUNCTION aerie.outbox_delivery_ended();

-- 2. A tenant's usage row is updated by every outbox and mailbox row it counts (4-5 times per
--    connection), each update a new version of the one row in a HOT chain that the next update
--    walks from the index entry until the page is pruned, which happens only once the page is
--    nearly full (about 100 versions of this row). With fillfactor 10 the page is pruned when
--    less than 90 % of it is free: chains stay a few versions long. The cost is room: new rows
--    are placed about 12 to a page instead of about 120 (some 65 MB for 100,000 tenants instead
--    of 6.5; nothing scans the table, every access is by its key). Rows already stored keep
--    their pages until the table is rewritten.
ALTER TABLE aerie.tenant_usage SET (fillfactor = 10);
