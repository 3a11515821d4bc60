-- The event log at scale (issue 14 item 5). Servers now run the sequencer at most once per short
-- interval per process (a burst of events is numbered by one run), and these make each event and
-- each stream page cheaper:
--
-- 1. The indexes on position hold numbered rows only. Every event used to add a NULL entry to
--    each (the unique one, and the backend's) at insert and its real entries at numbering; now
--    only the latter.
-- 2. A stream's page is one statement (aerie.backend_events): the backend's credential check and
--    the read together, instead of a transaction of three round trips. It reads as the owner
--    what the backend_stream policy would show the backend: its own tenants' numbered events.

DROP INDEX aerie.events_position;
CREATE UNIQUE INDEX events_position ON aerie.events (position) WHERE position IS NOT NULL;
DROP INDEX aerie.events_backend;
CREATE INDEX events_backend ON aerie.events (backend_id, position) WHERE backend_id IS NOT NULL AND position IS NOT NULL;

-- The events of `backend` after position `after`, in position order, at most max_rows (1000 at
-- most), if the backend is active and its token hash is `token`; otherwise one row with
-- position -1 and nothing else (the credential is no longer valid).
CREATE FUNCTION aerie.backend_events(backend uuid, token bytea, after bigint, max_rows integer)
RETURNS TABLE (tenant_id uuid, "position" bigint, kind text, data jsonb)
LANGUAGE plpgsql STABLE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    IF NOT EXISTS (SELECT 1 FROM aerie.backends b WHERE b.id = backend AND b.token_hash = token AND b.status = 'active') THEN
        RETURN QUERY SELECT NULL::uuid, (-1)::bigint, NULL::text, NULL::jsonb;
        RETURN;
    END IF;
    RETURN QUERY
        SELECT e.tenant_id, e.position, e.kind, e.data FROM aerie.events e
        WHERE e.backend_id = backend AND e.position > after
        ORDER BY e.position LIMIT least(max_rows, 1000);
END
$$;

REVOKE ALL ON FUNCTION aerie.backend_events(uuid, bytea, bigint, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION aerie.backend_events(uuid, bytea, bigint, integer) TO aerie_runtime;

-- 3. The triggers' insert into the log is PL/pgSQL: a LANGUAGE sql function that writes is
--    planned again at every call (its plan lives only as long as the calling statement), which
--    was most of what an event cost its transaction; PL/pgSQL keeps the plan for the session.
CREATE OR REPLACE FUNCTION aerie.log_event(tenant uuid, event_kind text, event_data jsonb) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
    SELECT t.id, t.backend_id, event_kind, event_data FROM aerie.tenants t WHERE t.id = tenant;
END
$$;
