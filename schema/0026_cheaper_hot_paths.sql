-- What the database spends per connection (issue 16 goal 1), without changing what any reader,
-- listener or quota sees:
--
-- 1. SQL functions that cannot be inlined (SECURITY DEFINER, or a SET clause) are parsed and
--    planned again at every call: their plan lives only as long as the calling statement, and a
--    PL/pgSQL caller's simple expression as long as its transaction. Those called in every
--    connection's flow become PL/pgSQL, whose plans live as long as the session:
--    aerie.quota_limit (each outbox and mailbox quota trigger) and aerie.tenant_for_verkey
--    (each inbound message). quota_limit loses its SET search_path too: it is no SECURITY
--    DEFINER and names only pg_catalog functions, schema-qualified; the SET cost a GUC save and
--    restore at every call.
-- 2. The outbox quota trigger reads the limit only where it checks it (a new pending row), and
--    counts with an UPDATE of the tenant's usage row, inserting it only when it is missing
--    (ON CONFLICT still covers two first rows at once), instead of an INSERT ... ON CONFLICT DO
--    UPDATE for every row (a speculative insertion each time).
-- 3. The connection columns kept in clear only for rows of the release before sealing
--    (schema/0018) are NULL on every sealed row, yet each insert and each update of a
--    connection added a NULL entry to the three indexes on them. They become partial on
--    IS NOT NULL: the lookups on them (`column = value`) imply it and keep using them.

CREATE OR REPLACE FUNCTION aerie.quota_limit(name text) RETURNS bigint
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    RETURN NULLIF(NULLIF(pg_catalog.current_setting(name, true), ''), '0')::bigint;
END
$$;
ALTER FUNCTION aerie.quota_limit(text) RESET ALL;

CREATE OR REPLACE FUNCTION aerie.tenant_for_verkey(lookup_verkey text) RETURNS uuid
    LANGUAGE plpgsql STABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    RETURN (SELECT k.tenant_id FROM aerie.tenant_keys k WHERE k.verkey = lookup_verkey);
END
$$;

CREATE OR REPLACE FUNCTION aerie.count_outbox() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    pending bigint;
    max_pending bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status <> 'pending' THEN RETURN NULL; END IF;
        UPDATE aerie.tenant_usage SET outbox_pending = outbox_pending + 1 WHERE tenant_id = NEW.tenant_id
        RETURNING outbox_pending INTO pending;
        IF NOT FOUND THEN
            INSERT INTO aerie.tenant_usage AS u (tenant_id, outbox_pending) VALUES (NEW.tenant_id, 1)
            ON CONFLICT (tenant_id) DO UPDATE SET outbox_pending = u.outbox_pending + 1
            RETURNING u.outbox_pending INTO pending;
        END IF;
        max_pending := aerie.quota_limit('aerie.outbox_max_pending');
        IF pending > max_pending THEN
            RAISE EXCEPTION USING ERRCODE = 'AEQ02',
                MESSAGE = format('too many of the tenant''s messages wait to be sent: %s, the limit (AERIE_OUTBOX_MAX_PENDING)', max_pending);
        END IF;
    ELSIF (TG_OP = 'UPDATE' AND OLD.status = 'pending' AND NEW.status <> 'pending')
        OR (TG_OP = 'DELETE' AND OLD.status = 'pending') THEN
        UPDATE aerie.tenant_usage SET outbox_pending = greatest(outbox_pending - 1, 0) WHERE tenant_id = OLD.tenant_id;
    END IF;
    RETURN NULL;
END
$$;

DROP INDEX aerie.connections_invitation_id;
DROP INDEX aerie.connections_public_did;
DROP INDEX aerie.connections_first_recipient_key;
CREATE INDEX connections_invitation_id ON aerie.connections (tenant_id, invitation_id) WHERE invitation_id IS NOT NULL;
CREATE INDEX connections_public_did ON aerie.connections (tenant_id, public_did) WHERE public_did IS NOT NULL;
CREATE INDEX connections_first_recipient_key ON aerie.connections (tenant_id, first_recipient_key)
    WHERE first_recipient_key IS NOT NULL;
