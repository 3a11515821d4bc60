-- A connection accepted in one call is inserted in state `requested` (issue 16 goal 1).
-- `connections.accept` used to insert the row as `initialized` and update it to `requested` in the
-- same transaction, only so that both states became events: a second, non-HOT row version with
-- its index entries and a trigger call, about 300 µs of the database per connection.
--
-- The event stream stays as it was: an inserted row in state `requested` records the
-- `initialized` event first, then the `requested` one, exactly the two events (kinds, payloads,
-- order of ids and NOTIFYs) the insert and the update recorded. The `initialized` event's
-- pairwiseDID is null, as it was (the row had no DID before connecting). Only the state machine's
-- `connect` (initialized -> requested) makes a `requested` connection, so a row inserted in that
-- state was initialized in the same transaction; rows inserted in any other state (the
-- inviter's `responded`, the connectionless `accepted`, `initialized`) record one event as before.
-- The one exception is a record made elsewhere and imported (`connections.deserialize`): its
-- transaction sets `aerie.imported_connection` to `on` (transaction-local) before the insert,
-- and its insert records the one event of its state, as before.

CREATE OR REPLACE FUNCTION aerie.record_event() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    kind text := TG_ARGV[0];
    pairwise text;
    payload jsonb;
    initialized jsonb;
BEGIN
    IF kind = 'message' THEN
        -- A sent message (schema/0016) is not a received one: its outcome is the outbox's delivery event.
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
    ELSIF kind = 'connection' THEN
        payload := jsonb_build_object('connectionId', NEW.id, 'state', NEW.state, 'pairwiseDID', left(NEW.my_did, 512));
        IF TG_OP = 'INSERT' AND NEW.state = 'requested'
            AND current_setting('aerie.imported_connection', true) IS DISTINCT FROM 'on' THEN
            initialized := jsonb_build_object('connectionId', NEW.id, 'state', 'initialized', 'pairwiseDID', NULL::text);
            INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
            SELECT t.id, t.backend_id, kind, e.data
            FROM aerie.tenants t, unnest(ARRAY[initialized, payload]) WITH ORDINALITY AS e (data, n)
            WHERE t.id = NEW.tenant_id ORDER BY e.n;
            PERFORM pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', kind) || initialized)::text);
            PERFORM pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', kind) || payload)::text);
            RETURN NULL;
        END IF;
    ELSIF kind = 'delivery' THEN
        payload := jsonb_build_object(
            'outboxId', NEW.id, 'connectionId', NEW.connection_id, 'status', NEW.status, 'messageUid', NEW.message_uid);
    ELSE
        RAISE EXCEPTION 'aerie.record_event: no event kind %', kind;
    END IF;
    INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
    SELECT t.id, t.backend_id, kind, payload FROM aerie.tenants t WHERE t.id = NEW.tenant_id;
    PERFORM pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', kind) || payload)::text);
    RETURN NULL;
END
$$;
