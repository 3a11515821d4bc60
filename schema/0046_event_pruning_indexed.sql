-- The pruning sweep (every minute, on every server) finds its rows through indexes instead of
-- reading the whole event log: the old events by `events_created` (new), the acknowledged ones
-- per backend by `events_backend` (backend_id, position). The two reasons are asked apart, as
-- an OR across the joined acknowledgement and webhook cursors can use neither index.
CREATE INDEX events_created ON aerie.events (created_at) WHERE position IS NOT NULL;

-- As schema/0025's: deletes up to max_rows numbered events created before cutoff, or at or below
-- their backend's acknowledged position and (when it has a webhook) its webhook's position.
CREATE OR REPLACE FUNCTION aerie.prune_events(cutoff timestamptz, max_rows integer) RETURNS integer
LANGUAGE sql VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH doomed AS (
        (SELECT e.tenant_id, e.id FROM aerie.events e
         WHERE e.position IS NOT NULL AND e.created_at < cutoff
         LIMIT least(max_rows, 10000))
        UNION
        (SELECT acked.tenant_id, acked.id
         FROM aerie.backend_event_acks a
         LEFT JOIN aerie.backend_webhooks w ON w.backend_id = a.backend_id
         CROSS JOIN LATERAL (
             SELECT e.tenant_id, e.id FROM aerie.events e
             WHERE e.backend_id = a.backend_id AND e.backend_id IS NOT NULL AND e.position IS NOT NULL
               AND e.position <= least(a.position, coalesce(w.position, a.position))
             LIMIT least(max_rows, 10000)
         ) acked
         LIMIT least(max_rows, 10000))
    ), gone AS (
        DELETE FROM aerie.events e
        USING (SELECT tenant_id, id FROM doomed LIMIT least(max_rows, 10000)) d
        WHERE e.tenant_id = d.tenant_id AND e.id = d.id RETURNING 1
    )
    SELECT count(*)::integer FROM gone
$$;
