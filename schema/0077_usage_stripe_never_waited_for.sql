-- A change to a tenant's count goes to a stripe no other transaction holds, so it never waits
-- for another transaction's commit there.
--
-- schema/0071 counted into the session's stripe, pg_backend_pid() % 16. A pool's ten sessions
-- share stripes (two sessions on one stripe in most pools), so a tenant's stores on those
-- sessions queued on one row, each through the other's commit. And a store of a remembered
-- recipient (which locks its connection, then counts) and a handler's store (which counts, then
-- locks the connection) on sessions sharing a stripe could deadlock: PostgreSQL broke it after
-- deadlock_timeout (1 s) and the loser was retried.
--
-- aerie.usage_stripe takes the session's stripe unless another transaction holds it, else the
-- next free one (a transaction-level advisory lock on the tenant and stripe, tried without
-- waiting), and keeps it until the transaction ends. With all 16 held it answers the session's
-- own, whose row the count then waits for, as before. The quota's reasoning (schema/0071) is
-- unchanged: each transaction that counted and has not committed holds the row of a stripe of
-- its own, so at most 15 others are unseen by a check. Deletes count the same way.
-- The trigger's body is schema/0076's but for where its stripe comes from.

-- A stripe of `tenant`'s count that no other transaction holds, held by this one until it ends.
-- The advisory locks' two-integer key space is used by nothing else; a hash shared by two
-- tenants only makes one skip a stripe the other holds.
CREATE FUNCTION aerie.usage_stripe(tenant uuid) RETURNS smallint
LANGUAGE plpgsql AS $$
DECLARE
    own integer := pg_backend_pid() % 16;
    key integer := hashtext(tenant::text);
BEGIN
    FOR i IN 0..15 LOOP
        IF pg_try_advisory_xact_lock(key, (own + i) % 16) THEN
            RETURN (own + i) % 16;
        END IF;
    END LOOP;
    RETURN own;
END
$$;
GRANT EXECUTE ON FUNCTION aerie.usage_stripe(uuid) TO aerie_runtime;

-- Deleted messages leave the count of a stripe of the deleting transaction (0071's body otherwise).
CREATE OR REPLACE FUNCTION aerie.count_mailbox_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO aerie.tenant_usage AS u (tenant_id, stripe, mailbox_messages, mailbox_bytes)
    SELECT o.tenant_id, aerie.usage_stripe(o.tenant_id), -count(*),
           -sum(coalesce(pg_column_size(o.payload), 0) + coalesce(pg_column_size(o.sealed), 0))
    FROM removed o GROUP BY o.tenant_id
    ON CONFLICT (tenant_id, stripe) DO UPDATE
        SET mailbox_messages = u.mailbox_messages + excluded.mailbox_messages,
            mailbox_bytes = u.mailbox_bytes + excluded.mailbox_bytes;
    RETURN NULL;
END
$$;

-- schema/0076's body, the stripe from aerie.usage_stripe.
CREATE OR REPLACE FUNCTION aerie.mailbox_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bytes bigint := coalesce(pg_column_size(NEW.payload), 0) + coalesce(pg_column_size(NEW.sealed), 0);
    own_stripe smallint;
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
        -- Assignments, not PERFORM: a simple expression costs no statement of its own.
        notified := set_config('aerie.usage_tx_messages', tx_messages::text, true);
        notified := set_config('aerie.usage_tx_bytes', tx_bytes::text, true);
    END IF;
    own_stripe := aerie.usage_stripe(NEW.tenant_id);
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
    notified := aerie.notify_event((jsonb_build_object('tenant', NEW.tenant_id, 'kind', 'message') || payload)::text);
    RETURN NULL;
END
$$;
