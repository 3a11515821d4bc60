-- The durable event log is for backends (schema/0017: only a backend's stream and its webhook
-- read aerie.events; a tenant session gets its events pushed from the NOTIFY, never from the
-- log), and a tenant's owner never changes. A tenant created without a backend (admin.tenants.create
-- by the operator) has no reader of its log: its rows were written, numbered by the sequencer
-- (a second row version each) and pruned at the end of the retention, and nobody could read
-- them. From here on it logs no row: per connection accepted, six event rows (insert,
-- foreign-key check, sequencer update, prune) less (issue 16, docs/BENCHMARKS.md). Its
-- connection and message events are still NOTIFYd (sessions' pushes, the caches, the waits of
-- connections.accept); a delivery's NOTIFY (outboxId, status) is the log's alone (EventHub
-- pushes nothing of it: it wakes the sequencer), so it goes only with a logged row. A backend's
-- tenants log and NOTIFY exactly as before.
--
-- Functions only (the three triggers that log: connection events, received messages,
-- deliveries that fail for good); the delivered row's mark logs in its own statement
-- (PostgresOutboxRepository.markSentSQL), with the same condition. Rows already logged for
-- tenants without a backend stay until the pruning removes them.

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
        WHERE t.id = NEW.tenant_id AND t.backend_id IS NOT NULL ORDER BY e.n;
        notified := pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', kind) || initialized)::text);
        notified := pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', kind) || payload)::text);
        RETURN NULL;
    END IF;
    INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
    SELECT t.id, t.backend_id, kind, payload FROM aerie.tenants t WHERE t.id = NEW.tenant_id AND t.backend_id IS NOT NULL;
    notified := pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', kind) || payload)::text);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION aerie.mailbox_inserted() RETURNS trigger
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
    SELECT t.id, t.backend_id, 'message', payload FROM aerie.tenants t WHERE t.id = NEW.tenant_id AND t.backend_id IS NOT NULL;
    notified := pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', 'message') || payload)::text);
    RETURN NULL;
END
$$;

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
        SELECT t.id, t.backend_id, 'delivery', payload FROM aerie.tenants t WHERE t.id = NEW.tenant_id AND t.backend_id IS NOT NULL;
        -- This NOTIFY is the log's only (nothing pushes it): it goes with the row.
        IF FOUND THEN
            notified := pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', 'delivery') || payload)::text);
        END IF;
    END IF;
    RETURN NULL;
END
$$;
