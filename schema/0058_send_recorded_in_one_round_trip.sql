-- A send's write (the sent message's mailbox row, the outbox row naming it) in one round trip
-- without BEGIN or COMMIT, behind a check that locks the connection and fails unless it is still
-- as read before packing (aerie.connection_as_read, schema/0037). The mailbox insert is queued,
-- so a second message with the same @id to the same peer cannot answer "nothing inserted": this
-- domain's check fails instead (PostgresError maps 23514 on it to the conflict the send answers).
-- The check passes when the row of the send's own uid is already stored: a rerun after a
-- connection lost at the commit finds what its first run committed.

CREATE DOMAIN aerie.sent_once AS boolean CHECK (VALUE);
GRANT USAGE ON DOMAIN aerie.sent_once TO aerie_runtime;
