-- What the database spends per connection, second pass (issue 16 goal 1). Measured per statement
-- with pg_stat_kcache during `aerie-bench connections` (docs/BENCHMARKS.md); nothing any reader,
-- listener or quota sees changes:
--
-- 1. The event triggers insert their row into aerie.events themselves instead of through
--    aerie.log_event: per event one PL/pgSQL call and one SPI execution less (6 events per
--    connection). One function, aerie.record_event, does it for the three kinds (the three it
--    replaces and aerie.log_event go); the triggers keep their names and conditions.
-- 2. The message event's lookup of the pairwise DID was one statement with
--    `c.id = NEW.connection_id OR (NEW.connection_id IS NULL AND c.my_verkey = ...)`: its generic
--    plan could not use either index well, so PL/pgSQL planned it again at most calls. Two
--    statements, one per case, each with a plan kept for the session.
-- 3. The mailbox's insert quota trigger is a row trigger: a statement trigger with a transition
--    table copied every inserted row (its sealed payload too) into a tuple store and counted it
--    with a grouped INSERT ... ON CONFLICT; the row trigger adds the row's size to the usage row
--    with an UPDATE (INSERT ... ON CONFLICT only when the row is missing), as the outbox one does
--    since schema/0026. The sizes are the same: pg_column_size of the stored values. The delete
--    trigger stays a statement trigger (retention deletes many rows at once).
-- 4. aerie.due_outbox (the delivery service's scan) and aerie.unhandled_mailbox were SQL
--    functions with SECURITY DEFINER, which PostgreSQL cannot inline: each call parsed and
--    planned their query again. PL/pgSQL keeps the plan for the session.

-- The event of a change, in its transaction: the log's row and the NOTIFY. TG_ARGV[0] names the
-- kind: 'message' (a mailbox row stored), 'connection' (a connection inserted or its state
-- changed), 'delivery' (an outbox row's delivery ended; the trigger's WHEN says when).
CREATE FUNCTION aerie.record_event() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    kind text := TG_ARGV[0];
    pairwise text;
    payload jsonb;
BEGIN
    IF kind = 'message' THEN
        -- A sent message (schema/0016) is not a received one: its outcome is the outbox's delivery event.
        IF NEW.direction = 'sent' THEN
            RETURN NULL;
        END IF;
        IF NEW.connection_id IS NOT NULL THEN
            SELECT c.my_did INTO pairwise FROM aerie.connections c WHERE c.tenant_id = NEW.tenant_id AND c.id = NEW.connection_id;
        ELSE
            SELECT c.my_did INTO pairwise FROM aerie.connections c
            WHERE c.tenant_id = NEW.tenant_id AND c.my_verkey = NEW.recipient_verkey LIMIT 1;
        END IF;
        payload := jsonb_build_object('uid', NEW.uid, 'type', left(NEW.type, 512), 'pairwiseDID', left(pairwise, 512));
    ELSIF kind = 'connection' THEN
        payload := jsonb_build_object('connectionId', NEW.id, 'state', NEW.state, 'pairwiseDID', left(NEW.my_did, 512));
    ELSIF kind = 'delivery' THEN
        payload := jsonb_build_object(
            'outboxId', NEW.id, 'connectionId', NEW.connection_id, 'status', NEW.status, 'messageUid', NEW.message_uid);
    ELSE
        RAISE EXCEPTION 'aerie.record_event: no event kind %', kind;
    END IF;
    INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
    SELECT t.id, t.backend_id, kind, payload FROM aerie.tenants t WHERE t.id = NEW.tenant_id;
    PERFORM pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', kind) || payload)::text);
    RETURN NULL;
END
$$;

GRANT EXECUTE ON FUNCTION aerie.record_event() TO aerie_runtime;

DROP TRIGGER mailbox_notify ON aerie.mailbox;
CREATE TRIGGER mailbox_notify AFTER INSERT ON aerie.mailbox
    FOR EACH ROW EXECUTE FUNCTION aerie.record_event('message');
DROP TRIGGER connections_notify_insert ON aerie.connections;
CREATE TRIGGER connections_notify_insert AFTER INSERT ON aerie.connections
    FOR EACH ROW EXECUTE FUNCTION aerie.record_event('connection');
DROP TRIGGER connections_notify_state ON aerie.connections;
CREATE TRIGGER connections_notify_state AFTER UPDATE OF state ON aerie.connections
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION aerie.record_event('connection');
DROP TRIGGER outbox_log_delivery ON aerie.outbox;
CREATE TRIGGER outbox_log_delivery AFTER UPDATE OF status ON aerie.outbox
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('sent', 'failed'))
    EXECUTE FUNCTION aerie.record_event('delivery');

DROP FUNCTION aerie.notify_mailbox_insert();
DROP FUNCTION aerie.notify_connection_state();
DROP FUNCTION aerie.log_outbox_delivery();
DROP FUNCTION aerie.log_event(uuid, text, jsonb);

DROP TRIGGER mailbox_count_insert ON aerie.mailbox;

CREATE OR REPLACE FUNCTION aerie.count_mailbox_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bytes bigint := coalesce(pg_column_size(NEW.payload), 0) + coalesce(pg_column_size(NEW.sealed), 0);
    used_messages bigint;
    used_bytes bigint;
    max_messages bigint;
    max_bytes bigint;
BEGIN
    UPDATE aerie.tenant_usage SET mailbox_messages = mailbox_messages + 1, mailbox_bytes = mailbox_bytes + bytes
    WHERE tenant_id = NEW.tenant_id
    RETURNING mailbox_messages, mailbox_bytes INTO used_messages, used_bytes;
    IF NOT FOUND THEN
        INSERT INTO aerie.tenant_usage AS u (tenant_id, mailbox_messages, mailbox_bytes) VALUES (NEW.tenant_id, 1, bytes)
        ON CONFLICT (tenant_id) DO UPDATE
            SET mailbox_messages = u.mailbox_messages + 1, mailbox_bytes = u.mailbox_bytes + bytes
        RETURNING u.mailbox_messages, u.mailbox_bytes INTO used_messages, used_bytes;
    END IF;
    max_messages := aerie.quota_limit('aerie.mailbox_max_messages');
    IF used_messages > max_messages THEN
        RAISE EXCEPTION USING ERRCODE = 'AEQ01',
            MESSAGE = format('the tenant''s mailbox is full: %s messages stored, the limit (AERIE_MAILBOX_MAX_MESSAGES)', max_messages);
    END IF;
    max_bytes := aerie.quota_limit('aerie.mailbox_max_bytes');
    IF used_bytes > max_bytes THEN
        RAISE EXCEPTION USING ERRCODE = 'AEQ01',
            MESSAGE = format('the tenant''s mailbox is full: %s bytes stored, the limit (AERIE_MAILBOX_MAX_BYTES)', max_bytes);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER mailbox_count_insert AFTER INSERT ON aerie.mailbox
    FOR EACH ROW EXECUTE FUNCTION aerie.count_mailbox_insert();

CREATE OR REPLACE FUNCTION aerie.due_outbox(max_rows integer, busy_destinations text[])
    RETURNS TABLE (tenant_id uuid, id uuid, destination text)
    LANGUAGE plpgsql STABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    RETURN QUERY
        SELECT o.tenant_id, o.id, coalesce(aerie.outbox_destination(o.endpoint), '') FROM aerie.outbox o
        WHERE o.status = 'pending' AND o.next_attempt_at <= now()
            AND coalesce(aerie.outbox_destination(o.endpoint), '') <> ALL (busy_destinations)
        ORDER BY o.next_attempt_at LIMIT least(max_rows, 1000);
END
$$;

CREATE OR REPLACE FUNCTION aerie.unhandled_mailbox(max_rows integer)
    RETURNS TABLE (tenant_id uuid, uid uuid)
    LANGUAGE plpgsql STABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    RETURN QUERY
        SELECT m.tenant_id, m.uid FROM aerie.mailbox m
        WHERE m.handled_at IS NULL AND m.next_handle_at <= now()
        ORDER BY m.next_handle_at LIMIT least(max_rows, 1000);
END
$$;
