-- Per-tenant quotas (issue 13 item 4): what a tenant's mailbox holds (messages and stored
-- bytes) and how many of its outbound messages wait to be sent, counted by triggers in the
-- transaction that changes them, and checked there against the limits the server sets on each
-- of its database sessions (aerie.mailbox_max_messages, aerie.mailbox_max_bytes,
-- aerie.outbox_max_pending; unset or 0 = no limit). A change that goes over a limit fails with
-- SQLSTATE AEQ01 (mailbox) or AEQ02 (outbox) and rolls back whole: nothing half stored.
-- Bytes are pg_column_size of the stored payload, clear or sealed (schema/0018), at insert
-- (what it occupies, compressed).

CREATE TABLE aerie.tenant_usage (
    tenant_id         uuid   NOT NULL REFERENCES aerie.tenants (id),
    mailbox_messages  bigint NOT NULL DEFAULT 0,
    mailbox_bytes     bigint NOT NULL DEFAULT 0,
    outbox_pending    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id)
);

ALTER TABLE aerie.tenant_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE aerie.tenant_usage FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON aerie.tenant_usage
    USING (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON aerie.tenant_usage TO aerie_runtime;

CREATE FUNCTION aerie.quota_limit(name text) RETURNS bigint
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT NULLIF(NULLIF(current_setting(name, true), ''), '0')::bigint $$;

-- Mailbox: statement-level, over the rows the statement inserted or deleted.
CREATE FUNCTION aerie.count_mailbox_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    used record;
    max_messages bigint := aerie.quota_limit('aerie.mailbox_max_messages');
    max_bytes bigint := aerie.quota_limit('aerie.mailbox_max_bytes');
BEGIN
    FOR used IN
        INSERT INTO aerie.tenant_usage AS u (tenant_id, mailbox_messages, mailbox_bytes)
        SELECT n.tenant_id, count(*), sum(coalesce(pg_column_size(n.payload), 0) + coalesce(pg_column_size(n.sealed), 0))
        FROM added n GROUP BY n.tenant_id
        ON CONFLICT (tenant_id) DO UPDATE
            SET mailbox_messages = u.mailbox_messages + excluded.mailbox_messages,
                mailbox_bytes = u.mailbox_bytes + excluded.mailbox_bytes
        RETURNING u.mailbox_messages, u.mailbox_bytes
    LOOP
        IF used.mailbox_messages > max_messages THEN
            RAISE EXCEPTION USING ERRCODE = 'AEQ01',
                MESSAGE = format('the tenant''s mailbox is full: %s messages stored, the limit (AERIE_MAILBOX_MAX_MESSAGES)', max_messages);
        END IF;
        IF used.mailbox_bytes > max_bytes THEN
            RAISE EXCEPTION USING ERRCODE = 'AEQ01',
                MESSAGE = format('the tenant''s mailbox is full: %s bytes stored, the limit (AERIE_MAILBOX_MAX_BYTES)', max_bytes);
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

CREATE FUNCTION aerie.count_mailbox_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE aerie.tenant_usage u
    SET mailbox_messages = greatest(u.mailbox_messages - g.messages, 0),
        mailbox_bytes = greatest(u.mailbox_bytes - g.bytes, 0)
    FROM (SELECT o.tenant_id, count(*) AS messages, sum(coalesce(pg_column_size(o.payload), 0) + coalesce(pg_column_size(o.sealed), 0)) AS bytes
          FROM removed o GROUP BY o.tenant_id) g
    WHERE u.tenant_id = g.tenant_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER mailbox_count_insert AFTER INSERT ON aerie.mailbox
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION aerie.count_mailbox_insert();
CREATE TRIGGER mailbox_count_delete AFTER DELETE ON aerie.mailbox
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION aerie.count_mailbox_delete();

-- Outbox: rows waiting to be sent (status pending).
CREATE FUNCTION aerie.count_outbox() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    pending bigint;
    max_pending bigint := aerie.quota_limit('aerie.outbox_max_pending');
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status <> 'pending' THEN RETURN NULL; END IF;
        INSERT INTO aerie.tenant_usage AS u (tenant_id, outbox_pending) VALUES (NEW.tenant_id, 1)
        ON CONFLICT (tenant_id) DO UPDATE SET outbox_pending = u.outbox_pending + 1
        RETURNING u.outbox_pending INTO pending;
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

CREATE TRIGGER outbox_count_insert AFTER INSERT ON aerie.outbox
    FOR EACH ROW EXECUTE FUNCTION aerie.count_outbox();
CREATE TRIGGER outbox_count_done AFTER UPDATE OF status ON aerie.outbox
    FOR EACH ROW WHEN (OLD.status = 'pending' AND NEW.status <> 'pending') EXECUTE FUNCTION aerie.count_outbox();
CREATE TRIGGER outbox_count_delete AFTER DELETE ON aerie.outbox
    FOR EACH ROW WHEN (OLD.status = 'pending') EXECUTE FUNCTION aerie.count_outbox();

GRANT EXECUTE ON FUNCTION aerie.quota_limit(text) TO aerie_runtime;
GRANT EXECUTE ON FUNCTION aerie.count_mailbox_insert() TO aerie_runtime;
GRANT EXECUTE ON FUNCTION aerie.count_mailbox_delete() TO aerie_runtime;
GRANT EXECUTE ON FUNCTION aerie.count_outbox() TO aerie_runtime;

-- What is already stored counts from the start. Row-level security is forced on these tables
-- even for their owner, so it is lifted for the count (the ALTERs lock the tables until this
-- migration commits, so nothing is written meanwhile).
ALTER TABLE aerie.mailbox NO FORCE ROW LEVEL SECURITY;
ALTER TABLE aerie.outbox NO FORCE ROW LEVEL SECURITY;
ALTER TABLE aerie.tenant_usage NO FORCE ROW LEVEL SECURITY;
INSERT INTO aerie.tenant_usage (tenant_id, mailbox_messages, mailbox_bytes, outbox_pending)
SELECT t.id,
       (SELECT count(*) FROM aerie.mailbox m WHERE m.tenant_id = t.id),
       coalesce((SELECT sum(coalesce(pg_column_size(m.payload), 0) + coalesce(pg_column_size(m.sealed), 0))
                 FROM aerie.mailbox m WHERE m.tenant_id = t.id), 0),
       (SELECT count(*) FROM aerie.outbox o WHERE o.tenant_id = t.id AND o.status = 'pending')
FROM aerie.tenants t;
ALTER TABLE aerie.mailbox FORCE ROW LEVEL SECURITY;
ALTER TABLE aerie.outbox FORCE ROW LEVEL SECURITY;
ALTER TABLE aerie.tenant_usage FORCE ROW LEVEL SECURITY;
