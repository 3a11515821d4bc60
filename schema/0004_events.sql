-- Server push across processes: every stored inbound message and every connection state change
-- sends a NOTIFY on channel aerie_events in the writing transaction (so it is delivered only if
-- that transaction commits). Each server process LISTENs on its own connection and fans the
-- event out to the subscribed sessions of that tenant. Payloads are small JSON objects, far
-- below NOTIFY's 8000-byte limit: {tenant, kind, ...}.

CREATE FUNCTION aerie.notify_mailbox_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    pairwise text;
BEGIN
    SELECT c.my_did INTO pairwise FROM aerie.connections c
    WHERE c.tenant_id = NEW.tenant_id
      AND (c.id = NEW.connection_id OR (NEW.connection_id IS NULL AND c.my_verkey = NEW.recipient_verkey))
    LIMIT 1;
    PERFORM pg_notify('aerie_events', json_build_object(
        'tenant', NEW.tenant_id, 'kind', 'message', 'uid', NEW.uid,
        'type', left(NEW.type, 512), 'pairwiseDID', left(pairwise, 512))::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER mailbox_notify AFTER INSERT ON aerie.mailbox
    FOR EACH ROW EXECUTE FUNCTION aerie.notify_mailbox_insert();

CREATE FUNCTION aerie.notify_connection_state() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('aerie_events', json_build_object(
        'tenant', NEW.tenant_id, 'kind', 'connection', 'connectionId', NEW.id, 'state', NEW.state,
        'pairwiseDID', left(NEW.my_did, 512))::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER connections_notify_insert AFTER INSERT ON aerie.connections
    FOR EACH ROW EXECUTE FUNCTION aerie.notify_connection_state();
CREATE TRIGGER connections_notify_state AFTER UPDATE OF state ON aerie.connections
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION aerie.notify_connection_state();

GRANT EXECUTE ON FUNCTION aerie.notify_mailbox_insert() TO aerie_runtime;
GRANT EXECUTE ON FUNCTION aerie.notify_connection_state() TO aerie_runtime;
