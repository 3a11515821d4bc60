-- Outbound delivery isolates destinations (issue 13 item 4): the due scan names each row's
-- destination (its endpoint's scheme://host:port, lower-cased) and skips the destinations the
-- calling server already has its fill of deliveries running to, so rows queued behind a slow or
-- tarpitting peer never hide other peers' rows, whoever is first in line.

DROP FUNCTION aerie.due_outbox(integer);

CREATE FUNCTION aerie.outbox_destination(endpoint text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT lower(substring(endpoint from '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*')) $$;

CREATE FUNCTION aerie.due_outbox(max_rows integer, busy_destinations text[])
    RETURNS TABLE (tenant_id uuid, id uuid, destination text)
    LANGUAGE sql STABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
        SELECT o.tenant_id, o.id, coalesce(aerie.outbox_destination(o.endpoint), '') FROM aerie.outbox o
        WHERE o.status = 'pending' AND o.next_attempt_at <= now()
            AND coalesce(aerie.outbox_destination(o.endpoint), '') <> ALL (busy_destinations)
        ORDER BY o.next_attempt_at LIMIT least(max_rows, 1000)
    $$;

REVOKE ALL ON FUNCTION aerie.due_outbox(integer, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION aerie.due_outbox(integer, text[]) TO aerie_runtime;
GRANT EXECUTE ON FUNCTION aerie.outbox_destination(text) TO aerie_runtime;
