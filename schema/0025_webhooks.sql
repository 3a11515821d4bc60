-- Webhooks (issue 14 item 4): a backend may have its events POSTed to a URL instead of (or as
-- well as) streaming them. One row per backend: the URL, the signing secret wrapped by the
-- server's master key (like a tenant's data key: it must be usable for HMAC, so it is encrypted,
-- not hashed; the associated data binds it to the backend and the row's generation), and the
-- webhook's own cursor: the position up to which the receiver answered 2xx. Delivery reads the
-- same log as events.subscribe, in position order, from the cursor.
--
-- One delivery per backend at a time across server processes: a lease (leased_by, the server's
-- instance name; leased_until) taken by aerie.claim_webhooks with SKIP LOCKED. A server that
-- dies holding one is replaced when the lease runs out, or at once by its own restart.
-- `generation` changes whenever the webhook is set again (new URL, new secret, new start), so a
-- delivery that began under the old settings cannot move the new cursor.
CREATE TABLE aerie.backend_webhooks (
    backend_id      uuid        PRIMARY KEY REFERENCES aerie.backends (id) ON DELETE CASCADE,
    url             text        NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    secret_wrapped  bytea       NOT NULL,
    generation      uuid        NOT NULL,
    position        bigint      NOT NULL CHECK (position >= 0),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    leased_by       text,
    leased_until    timestamptz,
    last_error      text,
    delivered_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT, UPDATE, DELETE ON aerie.backend_webhooks TO aerie_runtime;

-- Leases up to max_rows webhooks that are due (their next attempt has come, no other server
-- holds them, their backend is active) and have events past their cursor; returns them. Runs as
-- the owner to look into the log across backends (the runtime role sees one backend's rows at a
-- time).
CREATE FUNCTION aerie.claim_webhooks(instance text, lease_seconds integer, max_rows integer)
RETURNS TABLE (backend_id uuid, url text, secret_wrapped bytea, generation uuid, "position" bigint, attempts integer)
LANGUAGE sql VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH due AS (
        SELECT w.backend_id FROM aerie.backend_webhooks w
        JOIN aerie.backends b ON b.id = w.backend_id AND b.status = 'active'
        WHERE w.next_attempt_at <= now()
          AND (w.leased_until IS NULL OR w.leased_until < now() OR w.leased_by = instance)
          AND EXISTS (SELECT 1 FROM aerie.events e WHERE e.backend_id = w.backend_id AND e.position > w.position)
        ORDER BY w.next_attempt_at
        LIMIT least(max_rows, 1000)
        FOR UPDATE OF w SKIP LOCKED
    )
    UPDATE aerie.backend_webhooks w
    SET leased_by = instance, leased_until = now() + make_interval(secs => greatest(lease_seconds, 1))
    FROM due WHERE w.backend_id = due.backend_id
    RETURNING w.backend_id, w.url, w.secret_wrapped, w.generation, w.position, w.attempts
$$;

-- Pruning keeps what a webhook has not delivered yet, as it keeps what a stream has not
-- acknowledged: both until the retention ends, never longer.
CREATE OR REPLACE FUNCTION aerie.prune_events(cutoff timestamptz, max_rows integer) RETURNS integer
LANGUAGE sql VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH doomed AS (
        SELECT e.tenant_id, e.id FROM aerie.events e
        LEFT JOIN aerie.backend_event_acks a ON a.backend_id = e.backend_id
        LEFT JOIN aerie.backend_webhooks w ON w.backend_id = e.backend_id
        WHERE e.position IS NOT NULL
          AND (e.created_at < cutoff OR (e.position <= a.position AND (w.backend_id IS NULL OR e.position <= w.position)))
        LIMIT least(max_rows, 10000)
    ), gone AS (
        DELETE FROM aerie.events e USING doomed d WHERE e.tenant_id = d.tenant_id AND e.id = d.id RETURNING 1
    )
    SELECT count(*)::integer FROM gone
$$;

REVOKE ALL ON FUNCTION aerie.claim_webhooks(text, integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION aerie.claim_webhooks(text, integer, integer) TO aerie_runtime;
