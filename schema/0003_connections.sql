-- Connections (RFC 0160, invitee role), the tenant mailbox of inbound messages, and the durable
-- outbox of packed envelopes waiting to be delivered. All tenant-owned: tenant_id leads the key,
-- row-level security as in 0001.

CREATE TABLE aerie.connections (
    tenant_id           uuid        NOT NULL REFERENCES aerie.tenants (id),
    id                  uuid        NOT NULL,
    state               text        NOT NULL
                                    CHECK (state IN ('initialized', 'requested', 'responded', 'accepted',
                                                     'reused', 'failed', 'deleted')),
    invitation          jsonb       NOT NULL,
    invitation_kind     text        NOT NULL,
    -- duplicate detection (InvitationMatchKeys, normalised)
    invitation_id       text,
    public_did          text,
    first_recipient_key text,
    -- where the Request goes (from the invitation)
    invitation_endpoint text,
    invitation_routing_keys jsonb   NOT NULL DEFAULT '[]',
    -- ours
    my_did              text,
    my_verkey           text,
    -- the Request's @id: the thread id the Response must carry
    thread_id           text,
    -- theirs, from the Response's DIDDoc
    their_did           text,
    their_verkey        text,
    their_endpoint      text,
    their_routing_keys  jsonb       NOT NULL DEFAULT '[]',
    label               text,
    logo_url            text,
    goal                text,
    goal_code           text,
    failure_reason      text,
    problem_report      jsonb,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);

CREATE INDEX connections_invitation_id ON aerie.connections (tenant_id, invitation_id);
CREATE INDEX connections_public_did ON aerie.connections (tenant_id, public_did);
CREATE INDEX connections_first_recipient_key ON aerie.connections (tenant_id, first_recipient_key);
CREATE UNIQUE INDEX connections_my_did ON aerie.connections (tenant_id, my_did);
CREATE UNIQUE INDEX connections_my_verkey ON aerie.connections (tenant_id, my_verkey);
CREATE INDEX connections_state ON aerie.connections (tenant_id, state, id);

ALTER TABLE aerie.connections ENABLE ROW LEVEL SECURITY;
ALTER TABLE aerie.connections FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON aerie.connections
    USING (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON aerie.connections TO aerie_runtime;

-- Inbound messages, decrypted. A delivery repeated by the peer (same recipient key and @id) is
-- stored once.
CREATE TABLE aerie.mailbox (
    tenant_id         uuid        NOT NULL REFERENCES aerie.tenants (id),
    uid               uuid        NOT NULL,
    connection_id     uuid,
    recipient_verkey  text        NOT NULL,
    sender_verkey     text,
    message_id        text        NOT NULL,
    type              text        NOT NULL,
    thread_id         text,
    status            text        NOT NULL DEFAULT 'MS-103'
                                  CHECK (status IN ('MS-101', 'MS-102', 'MS-103', 'MS-104', 'MS-105', 'MS-106')),
    payload           jsonb       NOT NULL,
    received_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, uid),
    UNIQUE (tenant_id, recipient_verkey, message_id)
);

CREATE INDEX mailbox_connection ON aerie.mailbox (tenant_id, connection_id, status);

ALTER TABLE aerie.mailbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE aerie.mailbox FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON aerie.mailbox
    USING (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON aerie.mailbox TO aerie_runtime;

-- Packed envelopes to deliver; a row is written in the same transaction as the state change
-- that sends it, and marked sent in a transaction after the peer answered 2xx.
CREATE TABLE aerie.outbox (
    tenant_id        uuid        NOT NULL REFERENCES aerie.tenants (id),
    id               uuid        NOT NULL,
    connection_id    uuid,
    endpoint         text        NOT NULL,
    envelope         bytea       NOT NULL,
    attempts         integer     NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    status           text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);

CREATE INDEX outbox_due ON aerie.outbox (next_attempt_at) WHERE status = 'pending';

ALTER TABLE aerie.outbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE aerie.outbox FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON aerie.outbox
    USING (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON aerie.outbox TO aerie_runtime;

-- The delivery service polls across tenants before any tenant is set: this answers only which
-- (tenant, row) pairs are due, never their contents; each row is then read under its tenant.
DO $$
BEGIN
    EXECUTE format('CREATE POLICY owner_due_lookup ON aerie.outbox FOR SELECT TO %I USING (true)', current_user);
END
$$;

CREATE FUNCTION aerie.due_outbox(max_rows integer)
    RETURNS TABLE (tenant_id uuid, id uuid)
    LANGUAGE sql STABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
        SELECT o.tenant_id, o.id FROM aerie.outbox o
        WHERE o.status = 'pending' AND o.next_attempt_at <= now()
        ORDER BY o.next_attempt_at LIMIT least(max_rows, 1000)
    $$;

REVOKE ALL ON FUNCTION aerie.due_outbox(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION aerie.due_outbox(integer) TO aerie_runtime;
