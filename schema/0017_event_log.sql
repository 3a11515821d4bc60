-- The durable event log (issue 14 item 3): every event the triggers of schema/0004 NOTIFY (a
-- stored inbound message, a connection state change) and every outbox delivery that ends (sent,
-- failed) is also written to aerie.events by the same trigger, so in the same transaction as the
-- change it reports: a rolled-back change leaves no event. A row holds only what the NOTIFY
-- payload carries (ids, kind, type, state), never message contents.
--
-- Positions: a row is inserted with position NULL. Sequence values taken at insert time would not
-- be in commit order (a transaction holding 10 can commit after one holding 11, and a reader
-- already past 11 would skip 10 forever), so positions are assigned after commit by
-- aerie.sequence_events, one caller at a time (a transaction-scoped advisory lock): it numbers
-- the committed rows without a position in id order and commits them at once. Each run starts
-- after the previous one committed, so a reader that has seen position P never later finds a row
-- below P: `position > after ORDER BY position` misses nothing. Every server process runs it when
-- it hears an event's NOTIFY and on a short timer; it NOTIFYs {kind: "positions"} when it
-- numbered something, which wakes the streams.
--
-- Reading: the tenant policy as for every tenant table, and a backend policy: a backend session's
-- stream sets aerie.backend_id (only after checking the backend's token in that statement) and
-- sees the rows of its own tenants (backend_id copied from aerie.tenants at insert; a tenant's
-- owner never changes).

CREATE SEQUENCE aerie.event_position AS bigint MINVALUE 1;

CREATE TABLE aerie.events (
    tenant_id  uuid        NOT NULL REFERENCES aerie.tenants (id),
    id         bigint      GENERATED ALWAYS AS IDENTITY,
    position   bigint,
    backend_id uuid,
    kind       text        NOT NULL,
    data       jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);

CREATE UNIQUE INDEX events_position ON aerie.events (position);
CREATE INDEX events_unsequenced ON aerie.events (id) WHERE position IS NULL;
CREATE INDEX events_backend ON aerie.events (backend_id, position) WHERE backend_id IS NOT NULL;

ALTER TABLE aerie.events ENABLE ROW LEVEL SECURITY;
ALTER TABLE aerie.events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON aerie.events
    USING (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid);
CREATE POLICY backend_stream ON aerie.events FOR SELECT TO aerie_runtime
    USING (position IS NOT NULL AND backend_id = NULLIF(current_setting('aerie.backend_id', true), '')::uuid);
-- Inserted by the triggers (as the writing tenant), deleted with the tenant; never updated by
-- the runtime role (positions are the sequencer's).
GRANT SELECT, INSERT, DELETE ON aerie.events TO aerie_runtime;

-- Where each backend has acknowledged its stream up to (events.ack): pruning removes its events
-- at or below it. Global like aerie.backends.
CREATE TABLE aerie.backend_event_acks (
    backend_id uuid        PRIMARY KEY REFERENCES aerie.backends (id) ON DELETE CASCADE,
    position   bigint      NOT NULL CHECK (position >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT, UPDATE ON aerie.backend_event_acks TO aerie_runtime;

-- One event row, written by the triggers below in the transaction of the change.
CREATE FUNCTION aerie.log_event(tenant uuid, event_kind text, event_data jsonb) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
    SELECT t.id, t.backend_id, event_kind, event_data FROM aerie.tenants t WHERE t.id = tenant
$$;

CREATE OR REPLACE FUNCTION aerie.notify_mailbox_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    pairwise text;
    payload jsonb;
BEGIN
    -- A sent message (schema/0016) is not a received one: its outcome is the outbox's delivery event.
    IF NEW.direction = 'sent' THEN
        RETURN NULL;
    END IF;
    SELECT c.my_did INTO pairwise FROM aerie.connections c
    WHERE c.tenant_id = NEW.tenant_id
      AND (c.id = NEW.connection_id OR (NEW.connection_id IS NULL AND c.my_verkey = NEW.recipient_verkey))
    LIMIT 1;
    payload := jsonb_build_object('uid', NEW.uid, 'type', left(NEW.type, 512), 'pairwiseDID', left(pairwise, 512));
    PERFORM aerie.log_event(NEW.tenant_id, 'message', payload);
    PERFORM pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', 'message') || payload)::text);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION aerie.notify_connection_state() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    payload jsonb;
BEGIN
    payload := jsonb_build_object('connectionId', NEW.id, 'state', NEW.state, 'pairwiseDID', left(NEW.my_did, 512));
    PERFORM aerie.log_event(NEW.tenant_id, 'connection', payload);
    PERFORM pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', 'connection') || payload)::text);
    RETURN NULL;
END
$$;

-- A delivery that ended: sent, or failed for good (retries stay 'pending'); messageUid names the
-- sent message it carried (schema/0016), if any. (The push of a sent message's outcome to tenant
-- sessions is schema/0016's aerie.notify_delivery, on the mailbox row.)
CREATE FUNCTION aerie.log_outbox_delivery() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    payload jsonb;
BEGIN
    payload := jsonb_build_object(
        'outboxId', NEW.id, 'connectionId', NEW.connection_id, 'status', NEW.status, 'messageUid', NEW.message_uid);
    PERFORM aerie.log_event(NEW.tenant_id, 'delivery', payload);
    PERFORM pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', 'delivery') || payload)::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER outbox_log_delivery AFTER UPDATE OF status ON aerie.outbox
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('sent', 'failed'))
    EXECUTE FUNCTION aerie.log_outbox_delivery();

GRANT EXECUTE ON FUNCTION aerie.log_event(uuid, text, jsonb) TO aerie_runtime;
GRANT EXECUTE ON FUNCTION aerie.log_outbox_delivery() TO aerie_runtime;

-- The sequencer, the pruning and the head run as the owner, across tenants; forced RLS shows the
-- owner nothing without these policies (the runtime role is not a member of the owner).
DO $$
BEGIN
    EXECUTE format('CREATE POLICY owner_sequencer_read ON aerie.events FOR SELECT TO %I USING (true)', current_user);
    EXECUTE format('CREATE POLICY owner_sequencer ON aerie.events FOR UPDATE TO %I USING (position IS NULL) WITH CHECK (position IS NOT NULL)', current_user);
    EXECUTE format('CREATE POLICY owner_prune ON aerie.events FOR DELETE TO %I USING (position IS NOT NULL)', current_user);
END
$$;

-- Numbers up to max_rows committed events without a position, in id order; -1 when another
-- caller holds the sequencer (it will number these rows, or its next run will), else how many.
CREATE FUNCTION aerie.sequence_events(max_rows integer) RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tenants uuid[];
    ids bigint[];
    first_position bigint;
    numbered integer;
BEGIN
    IF NOT pg_try_advisory_xact_lock(7306431017) THEN
        RETURN -1;
    END IF;
    -- A statement of its own, so its snapshot is taken after the lock: it sees every earlier
    -- run's positions.
    SELECT array_agg(u.tenant_id ORDER BY u.id), array_agg(u.id ORDER BY u.id) INTO tenants, ids
    FROM (SELECT e.tenant_id, e.id FROM aerie.events e WHERE e.position IS NULL
          ORDER BY e.id LIMIT least(max_rows, 10000)) u;
    numbered := coalesce(cardinality(ids), 0);
    IF numbered = 0 THEN
        RETURN 0;
    END IF;
    first_position := nextval('aerie.event_position');
    IF numbered > 1 THEN
        PERFORM setval('aerie.event_position', first_position + numbered - 1);
    END IF;
    UPDATE aerie.events e SET position = first_position + n.ord - 1
    FROM unnest(tenants, ids) WITH ORDINALITY AS n(tenant_id, id, ord)
    WHERE e.tenant_id = n.tenant_id AND e.id = n.id;
    PERFORM pg_notify('aerie_events', json_build_object('kind', 'positions', 'upTo', first_position + numbered - 1)::text);
    RETURN numbered;
END
$$;

-- The highest position ever assigned (0 before the first): a reader's `after` cannot be above it.
CREATE FUNCTION aerie.event_head() RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT CASE WHEN s.is_called THEN s.last_value ELSE 0 END FROM aerie.event_position s $$;

-- Deletes up to max_rows numbered events created before cutoff, or at or below their backend's
-- acknowledged position; returns how many.
CREATE FUNCTION aerie.prune_events(cutoff timestamptz, max_rows integer) RETURNS integer
LANGUAGE sql VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH doomed AS (
        SELECT e.tenant_id, e.id FROM aerie.events e
        LEFT JOIN aerie.backend_event_acks a ON a.backend_id = e.backend_id
        WHERE e.position IS NOT NULL AND (e.created_at < cutoff OR e.position <= a.position)
        LIMIT least(max_rows, 10000)
    ), gone AS (
        DELETE FROM aerie.events e USING doomed d WHERE e.tenant_id = d.tenant_id AND e.id = d.id RETURNING 1
    )
    SELECT count(*)::integer FROM gone
$$;

REVOKE ALL ON FUNCTION aerie.sequence_events(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION aerie.event_head() FROM PUBLIC;
REVOKE ALL ON FUNCTION aerie.prune_events(timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION aerie.sequence_events(integer) TO aerie_runtime;
GRANT EXECUTE ON FUNCTION aerie.event_head() TO aerie_runtime;
GRANT EXECUTE ON FUNCTION aerie.prune_events(timestamptz, integer) TO aerie_runtime;
