-- A tenant without a backend logs no event row (schema/0033), but until here each of its
-- connection and message events still ran the trigger's INSERT ... SELECT, which joined the
-- tenant's row to find no backend: three executor runs per connection accepted for nothing
-- (issue 16, docs/BENCHMARKS.md). Every tenant write transaction now starts with the setting
-- `aerie.tenant_logs` (DatabaseSession.tenantSettingSQL: 'off' for a tenant without a backend,
-- 'on' otherwise, read from the tenant's row in the statement that sets `aerie.tenant_id`), and
-- the triggers skip the insert when it is 'off'. A transaction that did not set it (an operator's,
-- a migration's, an older server's) logs as before: the INSERT ... SELECT still decides by the
-- tenant's row. A tenant's backend never changes, so the setting cannot go stale within its
-- transaction. The NOTIFYs are unchanged.
--
-- Functions only; the bodies are 0033's but for the condition around the inserts.

CREATE OR REPLACE FUNCTION aerie.record_event() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    kind text := TG_ARGV[0];
    logs boolean := current_setting('aerie.tenant_logs', true) IS DISTINCT FROM 'off';
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
        IF logs THEN
            INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
            SELECT t.id, t.backend_id, kind, e.data
            FROM aerie.tenants t, unnest(ARRAY[initialized, payload]) WITH ORDINALITY AS e (data, n)
            WHERE t.id = NEW.tenant_id AND t.backend_id IS NOT NULL ORDER BY e.n;
        END IF;
        notified := pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', kind) || initialized)::text);
        notified := pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', kind) || payload)::text);
        RETURN NULL;
    END IF;
    IF logs THEN
        INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
        SELECT t.id, t.backend_id, kind, payload FROM aerie.tenants t WHERE t.id = NEW.tenant_id AND t.backend_id IS NOT NULL;
    END IF;
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
    IF current_setting('aerie.tenant_logs', true) IS DISTINCT FROM 'off' THEN
        INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
        SELECT t.id, t.backend_id, 'message', payload FROM aerie.tenants t WHERE t.id = NEW.tenant_id AND t.backend_id IS NOT NULL;
    END IF;
    notified := pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', 'message') || payload)::text);
    RETURN NULL;
END
$$;
