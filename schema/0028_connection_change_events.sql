-- Every change to a connection row reaches every server process, so each can drop the view it
-- caches for `connections.get` (ConnectionViewCache). schema/0004 already NOTIFYs an insert and a
-- state change (kind "connection"); this adds what it leaves out: an update that changes any
-- other column (keys, endpoint, label, sealed fields, the re-sealing of a clear row) and a
-- delete, including the rows a tenant's deletion removes. Sent in the writing transaction, so
-- only if it commits.
--
-- Payload: {tenant, kind: "connectionChanged", connectionId}. A DELETE statement sends one event
-- per tenant it touched: with the id when it removed one row, without it (the whole tenant's
-- views) when it removed several, so deleting a tenant of a million connections is one NOTIFY.
-- Cost: one more NOTIFY per such update or delete statement (state changes, the common update,
-- send nothing new); the listeners only drop cache entries.

CREATE FUNCTION aerie.notify_connection_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('aerie_events', json_build_object(
        'tenant', OLD.tenant_id, 'kind', 'connectionChanged', 'connectionId', OLD.id)::text);
    IF NEW.tenant_id IS DISTINCT FROM OLD.tenant_id OR NEW.id IS DISTINCT FROM OLD.id THEN
        PERFORM pg_notify('aerie_events', json_build_object(
            'tenant', NEW.tenant_id, 'kind', 'connectionChanged', 'connectionId', NEW.id)::text);
    END IF;
    RETURN NULL;
END
$$;

-- A state change already sent schema/0004's event for the row.
CREATE TRIGGER connections_notify_changed AFTER UPDATE ON aerie.connections
    FOR EACH ROW
    WHEN (OLD.state IS NOT DISTINCT FROM NEW.state AND OLD.* IS DISTINCT FROM NEW.*)
    EXECUTE FUNCTION aerie.notify_connection_changed();

CREATE FUNCTION aerie.notify_connections_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    gone record;
BEGIN
    FOR gone IN SELECT tenant_id, count(*) AS removed, min(id::text) AS one FROM deleted_rows GROUP BY tenant_id LOOP
        PERFORM pg_notify('aerie_events', json_build_object(
            'tenant', gone.tenant_id, 'kind', 'connectionChanged',
            'connectionId', CASE WHEN gone.removed = 1 THEN gone.one END)::text);
    END LOOP;
    RETURN NULL;
END
$$;

CREATE TRIGGER connections_notify_deleted AFTER DELETE ON aerie.connections
    REFERENCING OLD TABLE AS deleted_rows
    FOR EACH STATEMENT EXECUTE FUNCTION aerie.notify_connections_deleted();

GRANT EXECUTE ON FUNCTION aerie.notify_connection_changed() TO aerie_runtime;
GRANT EXECUTE ON FUNCTION aerie.notify_connections_deleted() TO aerie_runtime;
