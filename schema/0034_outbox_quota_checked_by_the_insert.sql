-- The outbox quota (AERIE_OUTBOX_MAX_PENDING, schema/0020) is checked by the statement that
-- queues a row (AerieStore's PostgresOutboxRepository.enqueue), against the tenant's pending rows
-- themselves, instead of a count kept in aerie.tenant_usage by row triggers (issue 16,
-- docs/BENCHMARKS.md).
--
-- The count cost four PL/pgSQL trigger calls per connection accepted, each an UPDATE of the
-- tenant's one usage row: up at each of the two rows queued, down at each delivery. Measured with
-- pg_stat_kcache in `aerie-bench connections`, they took 400-500 µs of PostgreSQL's CPU per
-- connection (over a tenth of its statements'), although the same UPDATEs cost a few µs each
-- in isolation (pgbench). Moving the count to sixteen rows per tenant cost more, not less, and a
-- row trigger that counts the pending rows at each insert cost as much as the old count: the
-- trigger calls themselves were the price. The insert now counts in its own statement (about
-- 400 µs per connection less than before), and nothing runs when a row is delivered or fails.
--
-- What a tenant sees is the same: a call that would queue a row past the limit answers
-- quota_exceeded (-32031) naming AERIE_OUTBOX_MAX_PENDING and stores nothing; a row leaves the
-- count when it is delivered (deleted, schema/0032) or fails for good. Two differences:
--   * The statement counts the pending rows committed when it starts. Sends of one tenant that
--     run at the same moment do not see each other, so together they can pass the limit by at
--     most how many of them run at once (the tenant's share of the pool, per server). The old
--     count serialised every send and every delivery of a tenant on its usage row instead.
--   * The count reads the tenant's pending rows, up to the limit. A tenant with few messages
--     waiting (every tenant whose peers answer) reads a few; one whose backlog nears the limit
--     reads that many per send (10,000 rows: 6-12 ms), its own cost: a tenant's calls hold at
--     most its share of the pool while others wait, and a row stays pending only while its
--     retries last.
--
-- A boolean domain whose check fails on false is how a plain SQL statement raises: the insert's
-- WHERE casts "there is room" to aerie.outbox_room, and PostgresError maps its check violation
-- (23514 on this domain) to quota_exceeded. SQL has no RAISE without a PL/pgSQL call, which is
-- what this migration removes.
--
-- During a rolling upgrade a server of the previous release inserts without the check (and
-- without the count, whose triggers are gone): its sends are not limited until it is replaced.

CREATE DOMAIN aerie.outbox_room AS boolean CHECK (VALUE);
GRANT USAGE ON DOMAIN aerie.outbox_room TO aerie_runtime;

DROP TRIGGER outbox_count_insert ON aerie.outbox;
DROP TRIGGER outbox_count_delete ON aerie.outbox;
DROP FUNCTION aerie.count_outbox();

-- The delivery that fails for good no longer uncounts; it still logs its event (schema/0033).
-- The trigger's condition (schema/0029) needs no change: a status that leaves 'pending' can only
-- become 'sent' or 'failed', so it fires exactly for the event, and the body tests nothing more.
CREATE OR REPLACE FUNCTION aerie.outbox_delivery_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    payload jsonb;
    notified text;
BEGIN
    payload := jsonb_build_object(
        'outboxId', NEW.id, 'connectionId', NEW.connection_id, 'status', NEW.status, 'messageUid', NEW.message_uid);
    INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
    SELECT t.id, t.backend_id, 'delivery', payload FROM aerie.tenants t WHERE t.id = NEW.tenant_id AND t.backend_id IS NOT NULL;
    -- This NOTIFY is the log's only (nothing pushes it): it goes with the row.
    IF FOUND THEN
        notified := pg_notify('aerie_events', (jsonb_build_object('tenant', NEW.tenant_id, 'kind', 'delivery') || payload)::text);
    END IF;
    RETURN NULL;
END
$$;

ALTER TABLE aerie.tenant_usage DROP COLUMN outbox_pending;
