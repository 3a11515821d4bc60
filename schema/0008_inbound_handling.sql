-- Inbound messages are handled exactly once (issue 12): each mailbox row says whether the
-- plugin handler for its type has run. A handler that only writes to the database stores the
-- message in its own transaction (handled_at set there), so storing and handling commit together.
-- A handler that failed leaves the row unhandled with the error and when to try again; the
-- recovery service retries those (bounded), at start and periodically.
ALTER TABLE aerie.mailbox
    -- Rows stored before this migration, and rows other code stores (attachments), count as handled.
    ADD COLUMN handled_at      timestamptz DEFAULT now(),
    ADD COLUMN handle_attempts integer     NOT NULL DEFAULT 0,
    ADD COLUMN handle_error    text,
    -- When the recovery service tries again; NULL once it gave up (or never needed).
    ADD COLUMN next_handle_at  timestamptz;

CREATE INDEX mailbox_unhandled ON aerie.mailbox (next_handle_at) WHERE handled_at IS NULL;

-- The recovery service's scan across tenants, before any tenant is set: it answers only which
-- (tenant, uid) pairs are due for another try, never their contents; each row is then read under
-- its tenant. The function runs as the owner, whom forced RLS would show no rows.
DO $$
BEGIN
    EXECUTE format('CREATE POLICY owner_unhandled_lookup ON aerie.mailbox FOR SELECT TO %I USING (true)', current_user);
END
$$;

CREATE FUNCTION aerie.unhandled_mailbox(max_rows integer)
    RETURNS TABLE (tenant_id uuid, uid uuid)
    LANGUAGE sql STABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
        SELECT m.tenant_id, m.uid FROM aerie.mailbox m
        WHERE m.handled_at IS NULL AND m.next_handle_at <= now()
        ORDER BY m.next_handle_at LIMIT least(max_rows, 1000)
    $$;

REVOKE ALL ON FUNCTION aerie.unhandled_mailbox(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION aerie.unhandled_mailbox(integer) TO aerie_runtime;

-- Outbox leases name the server instance that took them (AERIE_INSTANCE, by default host, state
-- directory and DIDComm address), so a server restarted after a crash takes back at once the rows
-- its previous run had leased, instead of waiting for the lease to expire.
ALTER TABLE aerie.outbox ADD COLUMN leased_by text;

DO $$
BEGIN
    EXECUTE format(
        'CREATE POLICY owner_lease_release ON aerie.outbox FOR UPDATE TO %I USING (leased_by IS NOT NULL) WITH CHECK (leased_by IS NULL)', current_user);
END
$$;

CREATE FUNCTION aerie.release_outbox_leases(instance text)
    RETURNS integer
    LANGUAGE sql VOLATILE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
        WITH released AS (
            UPDATE aerie.outbox SET next_attempt_at = now(), leased_by = NULL
            WHERE status = 'pending' AND leased_by = instance AND next_attempt_at > now()
            RETURNING 1
        )
        SELECT count(*)::integer FROM released
    $$;

REVOKE ALL ON FUNCTION aerie.release_outbox_leases(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION aerie.release_outbox_leases(text) TO aerie_runtime;
