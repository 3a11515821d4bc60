-- Credential changes reach every server process at once: rotating a tenant's token, suspending,
-- resuming, rewrapping its data key or deleting it sends a NOTIFY on channel aerie_events in the
-- writing transaction (so only if it commits). Each process drops its cached credentials of that
-- tenant and ends the push subscriptions of sessions that no longer hold the current token.
--
-- Payload: {tenant, kind: "credential", active, credential}. `credential` is the first 8 bytes
-- (hex) of SHA-256 over the stored token hash: enough to tell a session's token from the current
-- one, and nothing a listener could authenticate with. A deleted tenant sends active = false.

CREATE FUNCTION aerie.notify_tenant_credential() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('aerie_events', json_build_object(
            'tenant', OLD.id, 'kind', 'credential', 'active', false)::text);
    ELSE
        PERFORM pg_notify('aerie_events', json_build_object(
            'tenant', NEW.id, 'kind', 'credential', 'active', NEW.status = 'active',
            'credential', encode(substring(sha256(NEW.token_hash) FROM 1 FOR 8), 'hex'))::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER tenants_notify_credential AFTER UPDATE ON aerie.tenants
    FOR EACH ROW
    WHEN (OLD.token_hash IS DISTINCT FROM NEW.token_hash OR OLD.status IS DISTINCT FROM NEW.status
          OR OLD.data_key_wrapped IS DISTINCT FROM NEW.data_key_wrapped)
    EXECUTE FUNCTION aerie.notify_tenant_credential();
CREATE TRIGGER tenants_notify_delete AFTER DELETE ON aerie.tenants
    FOR EACH ROW EXECUTE FUNCTION aerie.notify_tenant_credential();

GRANT EXECUTE ON FUNCTION aerie.notify_tenant_credential() TO aerie_runtime;
