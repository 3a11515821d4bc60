-- A tenant's mailbox count lived in its one aerie.tenant_usage row, which every stored or sent
-- message updated (aerie.mailbox_inserted). The row's lock is held until commit, through the
-- commit's WAL flush, so a tenant's concurrent sessions queued on it one fsync after another
-- and could never share a group commit: the bound of one tenant's writes at scale
-- (docs/BENCHMARKS.md, "Writes at scale").
--
-- The count is now striped: up to 16 rows per tenant, told apart by `stripe`. A change counts
-- into the stripe of the database session that makes it (pg_backend_pid() % 16; a pool's
-- sessions spread over the stripes), so concurrent sessions of one tenant update different rows.
-- The tenant's usage is the sum of its stripes. A stripe alone may go below zero (a message
-- counted in one stripe is uncounted in the stripe of the session that deletes it).
--
-- The quota check sums the stripes only when a limit is set (no read otherwise). It sees its own
-- transaction's count and what other transactions committed: a transaction still running on
-- another stripe is not seen, so the mailbox can pass its limit by at most what transactions on
-- the tenant's other 15 stripes store at that moment (docs/SECURITY.md). Sessions on one stripe
-- still queue on its row, and see each other's counts as before.

ALTER TABLE aerie.tenant_usage ADD COLUMN stripe smallint NOT NULL DEFAULT 0 CHECK (stripe BETWEEN 0 AND 15);
ALTER TABLE aerie.tenant_usage DROP CONSTRAINT tenant_usage_pkey;
ALTER TABLE aerie.tenant_usage ADD PRIMARY KEY (tenant_id, stripe);

-- 0069's body but for the count: the session's stripe, and a sum only where a limit is set.
CREATE OR REPLACE FUNCTION aerie.mailbox_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bytes bigint := coalesce(pg_column_size(NEW.payload), 0) + coalesce(pg_column_size(NEW.sealed), 0);
    own_stripe smallint := pg_backend_pid() % 16;
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
    UPDATE aerie.tenant_usage SET mailbox_messages = mailbox_messages + 1, mailbox_bytes = mailbox_bytes + bytes
    WHERE tenant_id = NEW.tenant_id AND stripe = own_stripe;
    IF NOT FOUND THEN
        INSERT INTO aerie.tenant_usage AS u (tenant_id, stripe, mailbox_messages, mailbox_bytes)
        VALUES (NEW.tenant_id, own_stripe, 1, bytes)
        ON CONFLICT (tenant_id, stripe) DO UPDATE
            SET mailbox_messages = u.mailbox_messages + 1, mailbox_bytes = u.mailbox_bytes + bytes;
    END IF;
    max_messages := NULLIF(NULLIF(pg_catalog.current_setting('aerie.mailbox_max_messages', true), ''), '0')::bigint;
    max_bytes := NULLIF(NULLIF(pg_catalog.current_setting('aerie.mailbox_max_bytes', true), ''), '0')::bigint;
    IF max_messages IS NOT NULL OR max_bytes IS NOT NULL THEN
        SELECT sum(u.mailbox_messages), sum(u.mailbox_bytes) INTO used_messages, used_bytes
        FROM aerie.tenant_usage u WHERE u.tenant_id = NEW.tenant_id;
        IF used_messages > max_messages THEN
            RAISE EXCEPTION USING ERRCODE = 'AEQ01',
                MESSAGE = format('the tenant''s mailbox is full: %s messages stored, the limit (AERIE_MAILBOX_MAX_MESSAGES)', max_messages);
        END IF;
        IF used_bytes > max_bytes THEN
            RAISE EXCEPTION USING ERRCODE = 'AEQ01',
                MESSAGE = format('the tenant''s mailbox is full: %s bytes stored, the limit (AERIE_MAILBOX_MAX_BYTES)', max_bytes);
        END IF;
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

-- Deleted messages leave the count of the deleting session's stripe.
CREATE OR REPLACE FUNCTION aerie.count_mailbox_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO aerie.tenant_usage AS u (tenant_id, stripe, mailbox_messages, mailbox_bytes)
    SELECT o.tenant_id, pg_backend_pid() % 16, -count(*),
           -sum(coalesce(pg_column_size(o.payload), 0) + coalesce(pg_column_size(o.sealed), 0))
    FROM removed o GROUP BY o.tenant_id
    ON CONFLICT (tenant_id, stripe) DO UPDATE
        SET mailbox_messages = u.mailbox_messages + excluded.mailbox_messages,
            mailbox_bytes = u.mailbox_bytes + excluded.mailbox_bytes;
    RETURN NULL;
END
$$;

-- The import's count replaces the tenant's stripes with one row (stripe 0).
CREATE OR REPLACE FUNCTION aerie.count_imported_mailbox() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    tenant uuid := NULLIF(current_setting('aerie.tenant_id', true), '')::uuid;
    used record;
    max_messages bigint := NULLIF(NULLIF(pg_catalog.current_setting('aerie.mailbox_max_messages', true), ''), '0')::bigint;
    max_bytes bigint := NULLIF(NULLIF(pg_catalog.current_setting('aerie.mailbox_max_bytes', true), ''), '0')::bigint;
BEGIN
    DELETE FROM aerie.tenant_usage u WHERE u.tenant_id = tenant;
    INSERT INTO aerie.tenant_usage AS u (tenant_id, stripe, mailbox_messages, mailbox_bytes)
    SELECT tenant, 0, count(*), coalesce(sum(coalesce(pg_column_size(m.payload), 0) + coalesce(pg_column_size(m.sealed), 0)), 0)
    FROM aerie.mailbox m WHERE m.tenant_id = tenant
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
