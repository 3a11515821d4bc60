-- Each backend's webhook is delivered on its own: a server starts a delivery as soon as a slot is
-- free instead of waiting for every webhook it claimed together, so one slow or dead receiver
-- delays only its own backend. A server therefore claims while some of its own deliveries are
-- still running, and names those backends so that it does not take them again (it may take back
-- any other lease of its own at once, as after a restart).
CREATE FUNCTION aerie.claim_webhooks(instance text, lease_seconds integer, max_rows integer, running uuid[])
RETURNS TABLE (backend_id uuid, url text, secret_wrapped bytea, generation uuid, "position" bigint, attempts integer)
LANGUAGE sql VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH due AS (
        SELECT w.backend_id FROM aerie.backend_webhooks w
        JOIN aerie.backends b ON b.id = w.backend_id AND b.status = 'active'
        WHERE w.next_attempt_at <= now()
          AND (w.leased_until IS NULL OR w.leased_until < now() OR w.leased_by = instance)
          AND w.backend_id <> ALL (running)
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

REVOKE ALL ON FUNCTION aerie.claim_webhooks(text, integer, integer, uuid[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION aerie.claim_webhooks(text, integer, integer, uuid[]) TO aerie_runtime;
