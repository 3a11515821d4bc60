-- A received message's event is announced (NOTIFY) after the commit that stores it, when the
-- storing transaction asks for it, instead of by that commit.
--
-- PostgreSQL serialises notifying commits across the cluster: a transaction that has NOTIFYed
-- holds one lock from its commit until its commit record is flushed to disk, so two of them
-- never share a flush (a group commit). Every message stored from the inbound endpoint
-- NOTIFYed, so concurrent stores (ten peers sending at once) committed one fsync after another,
-- each paying its own. Now the store's transaction sets `aerie.notify_after_commit` (with its
-- tenant; DatabaseSession.announceEventsAfterCommit), the trigger keeps the event in the
-- session (`aerie.notify_pending`, a session setting: a rolled-back transaction takes its
-- events with it) and the commit's pipeline ends, after its Sync, with
-- aerie.notify_pending_events(): a transaction of its own that NOTIFYs them and commits without
-- waiting for the disk (it holds nothing durable: the lock is held for no flush). A listener
-- hears the event once the message is durable, as before, in the same round trip. Transactions
-- that do not ask NOTIFY at once, as before.
--
-- The trigger's two settings of the transaction's count are assignments instead of a PERFORM
-- (a statement run through SPI each time); nothing else of 0071's body changes: the quota's
-- reasoning there holds as written.

-- NOTIFYs `event` on aerie_events now, or after the commit when the transaction asked for it.
CREATE FUNCTION aerie.notify_event(event text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('aerie.notify_after_commit', true) = 'on' THEN
        -- Payloads are JSON text, which holds no raw newline.
        RETURN set_config('aerie.notify_pending', coalesce(current_setting('aerie.notify_pending', true), '') || event || E'\n', false);
    END IF;
    RETURN pg_notify('aerie_events', event);
END
$$;
GRANT EXECUTE ON FUNCTION aerie.notify_event(text) TO aerie_runtime;

-- The events kept by aerie.notify_event, NOTIFYed in order, in a transaction that commits
-- asynchronously (for itself alone); nothing when none are kept.
CREATE FUNCTION aerie.notify_pending_events() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    pending text := current_setting('aerie.notify_pending', true);
    event text;
    done text;
BEGIN
    IF pending IS NULL OR pending = '' THEN
        RETURN;
    END IF;
    done := set_config('aerie.notify_pending', '', false);
    done := set_config('synchronous_commit', 'off', true);
    FOREACH event IN ARRAY string_to_array(rtrim(pending, E'\n'), E'\n') LOOP
        done := pg_notify('aerie_events', event);
    END LOOP;
END
$$;
GRANT EXECUTE ON FUNCTION aerie.notify_pending_events() TO aerie_runtime;

-- 0071's body: the transaction's count set by assignments, the event through aerie.notify_event.
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
        -- Assignments, not PERFORM: a simple expression costs no statement of its own.
        notified := set_config('aerie.usage_tx_messages', tx_messages::text, true);
        notified := set_config('aerie.usage_tx_bytes', tx_bytes::text, true);
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
    notified := aerie.notify_event((jsonb_build_object('tenant', NEW.tenant_id, 'kind', 'message') || payload)::text);
    RETURN NULL;
END
$$;
