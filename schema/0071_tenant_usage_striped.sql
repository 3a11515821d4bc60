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
-- The quota still holds exactly (aerie.mailbox_inserted says how): far from the limit a store
-- checks the sum of the stripes without waiting for anyone; near it (within 15 transactions'
-- margin twice, 240 messages or 60 MiB), or for a transaction that stores more than the margin, it
-- takes all of the tenant's stripes and the stores queue as they did on the one row. A store
-- that holds its own stripe when it must take the others (others committed past the margin
-- between its two reads, or an earlier store of its transaction) can deadlock with another such:
-- one answers `busy` (retried), as any deadlock.
-- Without a limit nothing is read. Sessions on one stripe queue on its row, as before.

ALTER TABLE aerie.tenant_usage ADD COLUMN stripe smallint NOT NULL DEFAULT 0 CHECK (stripe BETWEEN 0 AND 15);
ALTER TABLE aerie.tenant_usage DROP CONSTRAINT tenant_usage_pkey;
ALTER TABLE aerie.tenant_usage ADD PRIMARY KEY (tenant_id, stripe);

-- Every stripe of the tenant's count, taken until the transaction ends, one after another in
-- stripe order (each row made first if missing, so no stripe can appear unseen, and no two
-- takers wait on each other): waits for every transaction that counted into one to commit.
CREATE FUNCTION aerie.lock_tenant_usage(tenant uuid) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    FOR s IN 0..15 LOOP
        INSERT INTO aerie.tenant_usage (tenant_id, stripe) VALUES (tenant, s) ON CONFLICT (tenant_id, stripe) DO NOTHING;
        PERFORM FROM aerie.tenant_usage u WHERE u.tenant_id = tenant AND u.stripe = s FOR UPDATE;
    END LOOP;
END
$$;
GRANT EXECUTE ON FUNCTION aerie.lock_tenant_usage(uuid) TO aerie_runtime;

-- 0069's body but for the count: the session's stripe, and the quota checked over all of them.
CREATE OR REPLACE FUNCTION aerie.mailbox_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bytes bigint := coalesce(pg_column_size(NEW.payload), 0) + coalesce(pg_column_size(NEW.sealed), 0);
    own_stripe smallint := pg_backend_pid() % 16;
    -- What one transaction may add to its stripe unseen by the others' checks (the margin).
    margin_messages constant bigint := 8;
    margin_bytes constant bigint := 2097152;
    tx_messages bigint;
    tx_bytes bigint;
    alone boolean;
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
    max_messages := NULLIF(NULLIF(pg_catalog.current_setting('aerie.mailbox_max_messages', true), ''), '0')::bigint;
    max_bytes := NULLIF(NULLIF(pg_catalog.current_setting('aerie.mailbox_max_bytes', true), ''), '0')::bigint;
    IF max_messages IS NOT NULL OR max_bytes IS NOT NULL THEN
        -- The quota holds exactly. Each transaction that counted and has not committed holds its
        -- stripe's row, so at most 15 others are unseen by a check, each holding at most the
        -- margin: a check that finds room for all of them passes without waiting (far from the
        -- limit). Otherwise, or past its own margin, the transaction takes every stripe of the
        -- tenant (all 16 rows made first, in stripe order), which waits for the others to commit,
        -- and checks the exact sum. Near the limit a tenant's stores queue as on one row.
        tx_messages := coalesce(NULLIF(current_setting('aerie.usage_tx_messages', true), ''), '0')::bigint + 1;
        tx_bytes := coalesce(NULLIF(current_setting('aerie.usage_tx_bytes', true), ''), '0')::bigint + bytes;
        alone := tx_messages > margin_messages OR tx_bytes > margin_bytes;
        IF NOT alone THEN
            SELECT coalesce(sum(u.mailbox_messages), 0), coalesce(sum(u.mailbox_bytes), 0) INTO used_messages, used_bytes
            FROM aerie.tenant_usage u WHERE u.tenant_id = NEW.tenant_id;
            -- Twice the margin here, so that the check after counting (which holds the
            -- stripe, and takes the others after it) rarely finds less room than that.
            alone := coalesce(used_messages + 1 + 30 * margin_messages > max_messages, false)
                OR coalesce(used_bytes + bytes + 30 * margin_bytes > max_bytes, false);
        END IF;
        IF alone THEN
            PERFORM aerie.lock_tenant_usage(NEW.tenant_id);
        END IF;
        PERFORM set_config('aerie.usage_tx_messages', tx_messages::text, true),
            set_config('aerie.usage_tx_bytes', tx_bytes::text, true);
    END IF;
    UPDATE aerie.tenant_usage SET mailbox_messages = mailbox_messages + 1, mailbox_bytes = mailbox_bytes + bytes
    WHERE tenant_id = NEW.tenant_id AND stripe = own_stripe;
    IF NOT FOUND THEN
        INSERT INTO aerie.tenant_usage AS u (tenant_id, stripe, mailbox_messages, mailbox_bytes)
        VALUES (NEW.tenant_id, own_stripe, 1, bytes)
        ON CONFLICT (tenant_id, stripe) DO UPDATE
            SET mailbox_messages = u.mailbox_messages + 1, mailbox_bytes = u.mailbox_bytes + bytes;
    END IF;
    IF max_messages IS NOT NULL OR max_bytes IS NOT NULL THEN
        SELECT coalesce(sum(u.mailbox_messages), 0), coalesce(sum(u.mailbox_bytes), 0) INTO used_messages, used_bytes
        FROM aerie.tenant_usage u WHERE u.tenant_id = NEW.tenant_id;
        -- Others committed since the first read: no longer room for all unseen ones.
        IF NOT alone AND (coalesce(used_messages + 15 * margin_messages > max_messages, false)
                OR coalesce(used_bytes + 15 * margin_bytes > max_bytes, false)) THEN
            PERFORM aerie.lock_tenant_usage(NEW.tenant_id);
            SELECT sum(u.mailbox_messages), sum(u.mailbox_bytes) INTO used_messages, used_bytes
            FROM aerie.tenant_usage u WHERE u.tenant_id = NEW.tenant_id;
        END IF;
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
