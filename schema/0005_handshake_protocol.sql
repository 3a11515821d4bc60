-- The handshake a connection was made with (the protocol actually used, e.g.
-- https://didcomm.org/connections/1.0 or https://didcomm.org/didexchange/1.1); null until
-- connect and for connections made before this migration.
ALTER TABLE aerie.connections ADD COLUMN handshake_protocol text;
