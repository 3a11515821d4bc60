-- Figures for the operator's metrics endpoint (issue 18): how many outbox rows wait for delivery
-- and how long the oldest has waited, across all tenants. Like aerie.due_outbox it answers
-- aggregates only, never a row's contents or which tenant it belongs to; the runtime role, bound
-- by row-level security, cannot count other tenants' rows itself. Pending rows only, through the
-- partial index outbox_due, so a scrape costs the same however many sent rows are kept.
CREATE FUNCTION aerie.outbox_stats()
    RETURNS TABLE (pending bigint, oldest_pending_seconds double precision)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
        SELECT count(*), coalesce(extract(epoch FROM now() - min(o.created_at)), 0)::double precision
        FROM aerie.outbox o
        WHERE o.status = 'pending'
    $$;

REVOKE ALL ON FUNCTION aerie.outbox_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION aerie.outbox_stats() TO aerie_runtime;
