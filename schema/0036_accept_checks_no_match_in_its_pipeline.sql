-- connections.accept in one round trip (issue 16, docs/BENCHMARKS.md). Its transaction took two:
-- the invitation's lock and the duplicate match (a read, whose answer decided what to write),
-- then the key, the connection and its Request queued for sending, and COMMIT. Now the match is
-- a check that travels in the same pipeline as the writes, after the lock: when the tenant has a
-- connection matching the invitation, the check fails, so the implicit transaction stops there
-- and stores nothing, and the server reads that connection and answers it (ConnectionService.
-- createAndConnect). The common case (no match) is one round trip without BEGIN or COMMIT.
--
-- As with aerie.outbox_room (schema/0034), a boolean domain whose check fails on false is how a
-- plain SQL statement raises: the check casts "no connection matches" to it, and PostgresError
-- maps its check violation (23514 on this domain) to conflict.

CREATE DOMAIN aerie.no_matching_connection AS boolean CHECK (VALUE);
GRANT USAGE ON DOMAIN aerie.no_matching_connection TO aerie_runtime;
