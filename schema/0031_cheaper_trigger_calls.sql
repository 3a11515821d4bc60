-- What the database spends per connection, fifth pass (issue 16 goal 1; docs/BENCHMARKS.md,
-- branch pgfive): the same rows, events, NOTIFYs, counts and quota errors as before, with less
-- work per trigger call. Functions and triggers only: no table is locked for longer than the
-- DROP/CREATE TRIGGER below takes (a brief lock on aerie.mailbox), nothing is rewritten.
--
-- 1. pg_notify is called as a PL/pgSQL expression (assigned to a variable) instead of by
--    PERFORM: PERFORM runs a one-row SELECT through the executor (start-up, run, shutdown, as
--    an SPI statement) for every NOTIFY, while an assigned function call is evaluated by
--    PL/pgSQL's simple-expression path. Six NOTIFYs per connection accepted. pg_notify returns
--    void; the variable only receives its empty text.
-- 2. The quota limits are read inline (current_setting) instead of through aerie.quota_limit, a
--    PL/pgSQL function called from PL/pgSQL (a function call and its frame each time: four per
--    connection). aerie.quota_limit has no other caller and is dropped.
-- 3. A mailbox row inserted fires one row trigger, aerie.mailbox_inserted (the usage count and
--    quota check, then the message event and its NOTIFY, in that order, as the two triggers
--    mailbox_count_insert and mailbox_notify did, which fired in name order), instead of two
--    trigger calls. aerie.count_mailbox_insert is dropped; aerie.record_event keeps the
--    connection events only (its 'message' kind moves to mailbox_inserted, its 'delivery' kind
--    has been aerie.outbox_delivery_ended's since 0029).

CREATE OR REPLACE FUNCTION aerie.record_event() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    kind text := TG_ARGV[0];
    payload jsonb;
    initialized jsonb;
    notified text;
BEGIN
    IF kind <> 'connection' THEN
        RAISE EXCEPTION 'aerie.record_event: no event kind %', kind;
    END IF;
    payload := jsonb_build_object('connectionId', NEW.id, 'state', NEW.state, 'pairwiseDID', left(NEW.my_did, 512));
    IF TG_OP = 'INSERT' AND NEW.state = 'requested'
        AND current_setting('aerie.imported_connection', true) IS DISTINCT FROM 'on' THEN
        initialized := jsonb_build_object('connectionId', NEW.id, 'state', 'initialized', 'pairwiseDID', NULL::text);
        INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
        SELECT t.id, t.backend_id, kind, e.data
        FROM aerie.tenants t, unnest(ARRAY[initialized, payload]) WITH ORDINALITY AS e (data, n)
        WHERE t.id = NEW.tenant_id ORDER BY e.n;
        notified := pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', kind) || initialized)::text);
        notified := pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', kind) || payload)::text);
        RETURN NULL;
    END IF;
    INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
    SELECT t.id, t.backend_id, kind, payload FROM aerie.tenants t WHERE t.id = NEW.tenant_id;
    notified := pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', kind) || payload)::text);
    RETURN NULL;
END
$$;

CREATE FUNCTION aerie.mailbox_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bytes bigint := coalesce(pg_column_size(NEW.payload), 0) + coalesce(pg_column_size(NEW.sealed), 0);
    used_messages bigint;
    used_bytes bigint;
    max_messages bigint;
    max_bytes bigint;
    pairwise text;
    payload jsonb;
    notified text;
BEGIN
    -- The count and the quota (0027's count_mailbox_insert).
    UPDATE aerie.tenant_usage SET mailbox_messages = mailbox_messages + 1, mailbox_bytes = mailbox_bytes + bytes
    WHERE tenant_id = NEW.tenant_id
    RETURNING mailbox_messages, mailbox_bytes INTO used_messages, used_bytes;
    IF NOT FOUND THEN
        INSERT INTO aerie.tenant_usage AS u (tenant_id, mailbox_messages, mailbox_bytes) VALUES (NEW.tenant_id, 1, bytes)
        ON CONFLICT (tenant_id) DO UPDATE
            SET mailbox_messages = u.mailbox_messages + 1, mailbox_bytes = u.mailbox_bytes + bytes
        RETURNING u.mailbox_messages, u.mailbox_bytes INTO used_messages, used_bytes;
    END IF;
    max_messages := NULLIF(NULLIF(pg_catalog.current_setting('aerie.mailbox_max_messages', true), ''), '0')::bigint;
    IF used_messages > max_messages THEN
        RAISE EXCEPTION USING ERRCODE = 'AEQ01',
            MESSAGE = format('the tenant''s mailbox is full: %s messages stored, the limit (AERIE_MAILBOX_MAX_MESSAGES)', max_messages);
    END IF;
    max_bytes := NULLIF(NULLIF(pg_catalog.current_setting('aerie.mailbox_max_bytes', true), ''), '0')::bigint;
    IF used_bytes > max_bytes THEN
        RAISE EXCEPTION USING ERRCODE = 'AEQ01',
            MESSAGE = format('the tenant''s mailbox is full: %s bytes stored, the limit (AERIE_MAILBOX_MAX_BYTES)', max_bytes);
    END IF;
    -- The message event (record_event('message') before). A sent message (schema/0016) is not a
    -- received one: its outcome is the outbox's delivery event.
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
    INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
    SELECT t.id, t.backend_id, 'message', payload FROM aerie.tenants t WHERE t.id = NEW.tenant_id;
    notified := pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', 'message') || payload)::text);
    RETURN NULL;
END
$$;

GRANT EXECUTE ON FUNCTION aerie.mailbox_inserted() TO aerie_runtime;

DROP TRIGGER mailbox_count_insert ON aerie.mailbox;
DROP TRIGGER mailbox_notify ON aerie.mailbox;
CREATE TRIGGER mailbox_inserted AFTER INSERT ON aerie.mailbox
    FOR EACH ROW EXECUTE FUNCTION aerie.mailbox_inserted();
DROP FUNCTION aerie.count_mailbox_insert();

CREATE OR REPLACE FUNCTION aerie.count_outbox() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    pending bigint;
    max_pending bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status <> 'pending' THEN RETURN NULL; END IF;
        UPDATE aerie.tenant_usage SET outbox_pending = outbox_pending + 1 WHERE tenant_id = NEW.tenant_id
        RETURNING outbox_pending INTO pending;
        IF NOT FOUND THEN
            INSERT INTO aerie.tenant_usage AS u (tenant_id, outbox_pending) VALUES (NEW.tenant_id, 1)
            ON CONFLICT (tenant_id) DO UPDATE SET outbox_pending = u.outbox_pending + 1
            RETURNING u.outbox_pending INTO pending;
        END IF;
        max_pending := NULLIF(NULLIF(pg_catalog.current_setting('aerie.outbox_max_pending', true), ''), '0')::bigint;
        IF pending > max_pending THEN
            RAISE EXCEPTION USING ERRCODE = 'AEQ02',
                MESSAGE = format('too many of the tenant''s messages wait to be sent: %s, the limit (AERIE_OUTBOX_MAX_PENDING)', max_pending);
        END IF;
    ELSIF (TG_OP = 'UPDATE' AND OLD.status = 'pending' AND NEW.status <> 'pending')
        OR (TG_OP = 'DELETE' AND OLD.status = 'pending') THEN
        UPDATE aerie.tenant_usage SET outbox_pending = greatest(outbox_pending - 1, 0) WHERE tenant_id = OLD.tenant_id;
    END IF;
    RETURN NULL;
END
$$;

DROP FUNCTION aerie.quota_limit(text);

CREATE OR REPLACE FUNCTION aerie.outbox_delivery_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    payload jsonb;
    notified text;
BEGIN
    IF OLD.status = 'pending' THEN
        UPDATE aerie.tenant_usage SET outbox_pending = greatest(outbox_pending - 1, 0) WHERE tenant_id = OLD.tenant_id;
    END IF;
    IF NEW.status IN ('sent', 'failed') AND OLD.status IS DISTINCT FROM NEW.status THEN
        payload := jsonb_build_object(
            'outboxId', NEW.id, 'connectionId', NEW.connection_id, 'status', NEW.status, 'messageUid', NEW.message_uid);
        INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
        SELECT t.id, t.backend_id, 'delivery', payload FROM aerie.tenants t WHERE t.id = NEW.tenant_id;
        notified := pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', 'delivery') || payload)::text);
    END IF;
    RETURN NULL;
END
$$;

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
        'reason', left(NEW.delivery_error, 500))::text);
    RETURN NULL;
END
$$;
