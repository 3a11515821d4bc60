-- A tenant import writes its whole mailbox in one transaction. The mailbox's row trigger
-- updated the tenant's one aerie.tenant_usage row for every message, each update a new version
-- of that row the next one had to step over: 200,000 messages took 470 s, growing with the
-- square of the count. It also NOTIFYed each copied message as if it had just arrived. Now the
-- import sets `aerie.importing_tenant` for its transaction (TenantImportWriter.begin): the
-- trigger does nothing then, and the import counts the mailbox once before it commits, checking
-- the same quotas (SQLSTATE AEQ01: the import rolls back whole).
--
-- The trigger's body is 0035's but for the early return.

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
    -- A tenant import counts its mailbox once, at its end (aerie.count_imported_mailbox), and
    -- announces none of the messages it copies (they are not new).
    IF current_setting('aerie.importing_tenant', true) = 'on' THEN
        RETURN NULL;
    END IF;
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

-- The tenant of the transaction (aerie.tenant_id): its mailbox counted into its usage row,
-- checked against the server's limits. Runs as the caller, under row-level security.
CREATE FUNCTION aerie.count_imported_mailbox() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    tenant uuid := NULLIF(current_setting('aerie.tenant_id', true), '')::uuid;
    used record;
    max_messages bigint := NULLIF(NULLIF(pg_catalog.current_setting('aerie.mailbox_max_messages', true), ''), '0')::bigint;
    max_bytes bigint := NULLIF(NULLIF(pg_catalog.current_setting('aerie.mailbox_max_bytes', true), ''), '0')::bigint;
BEGIN
    INSERT INTO aerie.tenant_usage AS u (tenant_id, mailbox_messages, mailbox_bytes)
    SELECT tenant, count(*), coalesce(sum(coalesce(pg_column_size(m.payload), 0) + coalesce(pg_column_size(m.sealed), 0)), 0)
    FROM aerie.mailbox m WHERE m.tenant_id = tenant
    ON CONFLICT (tenant_id) DO UPDATE
        SET mailbox_messages = excluded.mailbox_messages, mailbox_bytes = excluded.mailbox_bytes
    RETURNING u.mailbox_messages, u.mailbox_bytes INTO used;
    IF used.mailbox_messages > max_messages THEN
        RAISE EXCEPTION USING ERRCODE = 'AEQ01',
            MESSAGE = format('the tenant''s mailbox is over the limit: %s messages, the limit is %s (AERIE_MAILBOX_MAX_MESSAGES)',
                used.mailbox_messages, max_messages);
    END IF;
    IF used.mailbox_bytes > max_bytes THEN
        RAISE EXCEPTION USING ERRCODE = 'AEQ01',
            MESSAGE = format('the tenant''s mailbox is over the limit: %s bytes, the limit is %s (AERIE_MAILBOX_MAX_BYTES)',
                used.mailbox_bytes, max_bytes);
    END IF;
END
$$;
GRANT EXECUTE ON FUNCTION aerie.count_imported_mailbox() TO aerie_runtime;
