-- DID Rotate (RFC 0794). While a rotation of ours waits for the peer's `ack`, both our keys
-- receive: the new one is kept in clear in `my_next_verkey` (like `my_verkey`, it only routes
-- inbound mail), unique per tenant, so the inbound lookup finds the connection by either key
-- with one index probe each. The new DID and the `rotate` message's @id are in the row's sealed
-- object. The ack moves the new key and DID into `my_verkey` and `my_did` and clears this.
--
-- A rotation's steps (ours sent, completed or refused; the peer's observed or refused; the
-- peer's hangup is a state change and has its connection event) are events of kind `rotation`:
-- {connectionId, role, state, pairwiseDID}, logged for tenants with a backend and NOTIFYed as the
-- connection events are (schema/0035), in the writing transaction. The connections plugin calls
-- aerie.record_rotation_event in the transaction that makes the step.

ALTER TABLE aerie.connections ADD COLUMN my_next_verkey text;

CREATE UNIQUE INDEX connections_my_next_verkey ON aerie.connections (tenant_id, my_next_verkey)
    WHERE my_next_verkey IS NOT NULL;

CREATE FUNCTION aerie.record_rotation_event(data jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    tenant uuid := NULLIF(current_setting('aerie.tenant_id', true), '')::uuid;
    logs boolean := current_setting('aerie.tenant_logs', true) IS DISTINCT FROM 'off';
    notified text;
BEGIN
    IF tenant IS NULL THEN
        RAISE EXCEPTION 'aerie.record_rotation_event: no tenant set';
    END IF;
    IF logs THEN
        INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
        SELECT t.id, t.backend_id, 'rotation', data FROM aerie.tenants t WHERE t.id = tenant AND t.backend_id IS NOT NULL;
    END IF;
    notified := pg_notify('aerie_events', (jsonb_build_object('tenant', tenant, 'kind', 'rotation') || data)::text);
END
$$;

GRANT EXECUTE ON FUNCTION aerie.record_rotation_event(jsonb) TO aerie_runtime;
