-- A connection's Response applied in one round trip (issue 16, docs/BENCHMARKS.md). Its
-- transaction took two: the mailbox store with the connection's lock (a read, whose answer the
-- update was computed from), then the update, the trust ping queued for sending, and COMMIT. The
-- inbound pipeline has already read the connection (unlocked) with the recipient's key, so the
-- update is now computed from that read, and a check queued in front of it locks the row and
-- fails unless the row is still as read (same state, same updated_at): the implicit transaction
-- then stops there and stores nothing, and the server applies the message on the locked path as
-- before (ConnectionService.accept). The common case is one round trip without BEGIN or COMMIT.
--
-- As with aerie.no_matching_connection (schema/0036), a boolean domain whose check fails on false
-- is how a plain SQL statement raises: PostgresError maps its check violation (23514 on this
-- domain) to ConnectionAsRead.changed.

CREATE DOMAIN aerie.connection_as_read AS boolean CHECK (VALUE);
GRANT USAGE ON DOMAIN aerie.connection_as_read TO aerie_runtime;
