-- A deleted key reaches every server process, so none opens a message to it from what it keeps
-- in memory (RecentRecipients: the pairwise keys a process has just made, each with its sealed
-- secret, so the peer's Response skips the inbound lookup). A key is deleted with its
-- connection, on its own (`keys.delete`), or with a single-use invitation's first Request; the
-- first and the last also change a connection row (schema/0004, 0028), the second changes nothing
-- else. Sent in the deleting transaction, so only if it commits.
--
-- Payload: {tenant, kind: "keysDeleted", verkey}. One event per tenant a DELETE statement
-- touched: with the verkey when it removed one row, without it (every key of the tenant) when it
-- removed several, so deleting a tenant is one NOTIFY. Inserts and the common paths send nothing.

CREATE FUNCTION aerie.notify_keys_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    gone record;
BEGIN
    FOR gone IN SELECT tenant_id, count(*) AS removed, min(verkey) AS one FROM deleted_keys GROUP BY tenant_id LOOP
        PERFORM pg_notify('aerie_events', json_build_object(
            'tenant', gone.tenant_id, 'kind', 'keysDeleted',
            'verkey', CASE WHEN gone.removed = 1 THEN gone.one END)::text);
    END LOOP;
    RETURN NULL;
END
$$;

CREATE TRIGGER tenant_keys_notify_deleted AFTER DELETE ON aerie.tenant_keys
    REFERENCING OLD TABLE AS deleted_keys
    FOR EACH STATEMENT EXECUTE FUNCTION aerie.notify_keys_deleted();

GRANT EXECUTE ON FUNCTION aerie.notify_keys_deleted() TO aerie_runtime;
