-- The tenant key wallet: each row is one Ed25519 key, stored as its 32-byte seed sealed by the
-- tenant's data key (XChaCha20-Poly1305, associated data = tenant id || verkey; see
-- AerieCrypto's DataKey). The database never sees a private key in clear, and a sealed secret
-- copied to another tenant or another verkey does not open.

CREATE TABLE aerie.tenant_keys (
    tenant_id     uuid        NOT NULL REFERENCES aerie.tenants (id),
    -- base58 of the 32-byte public key, the DIDComm v1 kid form
    verkey        text        COLLATE "C" NOT NULL
                              CHECK (verkey ~ '^[1-9A-HJ-NP-Za-km-z]{32,44}$'),
    sealed_secret bytea       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, verkey)
);

-- A verkey belongs to at most one tenant, so an inbound message has exactly one owner. (When the
-- tenant tables are distributed by tenant_id, this becomes a lookup table keyed by verkey.)
CREATE UNIQUE INDEX tenant_keys_verkey ON aerie.tenant_keys (verkey);

ALTER TABLE aerie.tenant_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE aerie.tenant_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON aerie.tenant_keys
    USING (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid);

-- Keys are never changed in place (no UPDATE): a key is created or deleted.
GRANT SELECT, INSERT, DELETE ON aerie.tenant_keys TO aerie_runtime;

-- The inbound DIDComm endpoint must find which tenant holds a recipient verkey before any
-- tenant is set. This function answers only that (a tenant id, never a row) and runs as the
-- owner role; FORCE ROW LEVEL SECURITY applies to the owner too, hence the read policy below,
-- which admits the owner only (the role running this migration, normally aerie_owner; the
-- runtime role is not a member of it).
DO $$
BEGIN
    EXECUTE format(
        'CREATE POLICY owner_verkey_lookup ON aerie.tenant_keys FOR SELECT TO %I USING (true)', current_user);
END
$$;

CREATE FUNCTION aerie.tenant_for_verkey(lookup_verkey text) RETURNS uuid
    LANGUAGE sql STABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT k.tenant_id FROM aerie.tenant_keys k WHERE k.verkey = lookup_verkey $$;

REVOKE ALL ON FUNCTION aerie.tenant_for_verkey(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION aerie.tenant_for_verkey(text) TO aerie_runtime;
