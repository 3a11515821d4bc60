-- A delivered outbox row is deleted by the statement that marks it (AerieStore's
-- PostgresOutboxRepository.markSentSQL), which also logs its delivery event: the outbox holds
-- only what is still to be sent. Before, delivered rows stayed as `sent`, envelope included,
-- and nothing removed them. The ones an earlier release left go now; their delivery events were
-- logged when they were sent. The quota count is untouched: it counts pending rows only (the
-- DELETE trigger of schema/0020 fires for pending rows alone).
-- Row-level security is forced on the outbox even for its owner, so it is lifted for the delete
-- (as schema/0020 did for its count: the ALTERs lock the table until this migration commits, so
-- nothing is written meanwhile).
ALTER TABLE aerie.outbox NO FORCE ROW LEVEL SECURITY;
DELETE FROM aerie.outbox WHERE status = 'sent';
ALTER TABLE aerie.outbox FORCE ROW LEVEL SECURITY;
