-- Everything a tenant owns that the database does not need in clear is sealed under the
-- tenant's data key (issue 15). Each tenant table gets one `sealed` column: a JSON object of the
-- row's private fields, XChaCha20-Poly1305 with associated data (tenant, table, 'sealed', row id),
-- written by the repository (AerieStore/RowSealing). Equality lookups go through keyed BLAKE2b
-- hashes (`*_hash`, per-tenant lookup key). A row whose `sealed` is NULL is in the previous
-- release's clear form: readers accept it, and the server's SealingMigrationService rewrites it
-- sealed, tenant by tenant, clearing its clear columns. The CHECKs keep a sealed row from ever
-- carrying its private fields in clear as well. What stays clear, and why: docs/ARCHITECTURE.md.

ALTER TABLE aerie.connections
    ADD COLUMN sealed                   bytea,
    ADD COLUMN invitation_id_hash       bytea,
    ADD COLUMN public_did_hash          bytea,
    ADD COLUMN first_recipient_key_hash bytea,
    ALTER COLUMN invitation DROP NOT NULL,
    ALTER COLUMN invitation_routing_keys DROP NOT NULL,
    ALTER COLUMN their_routing_keys DROP NOT NULL,
    ADD CONSTRAINT connections_sealed_has_no_clear CHECK (sealed IS NULL OR (
        invitation IS NULL AND invitation_id IS NULL AND public_did IS NULL AND first_recipient_key IS NULL
        AND invitation_endpoint IS NULL AND invitation_routing_keys IS NULL AND thread_id IS NULL
        AND their_verkey IS NULL AND their_endpoint IS NULL AND their_routing_keys IS NULL AND label IS NULL
        AND logo_url IS NULL AND goal IS NULL AND goal_code IS NULL AND failure_reason IS NULL
        AND problem_report IS NULL));

CREATE INDEX connections_invitation_id_hash ON aerie.connections (tenant_id, invitation_id_hash);
CREATE INDEX connections_public_did_hash ON aerie.connections (tenant_id, public_did_hash);
CREATE INDEX connections_first_recipient_key_hash ON aerie.connections (tenant_id, first_recipient_key_hash);
CREATE INDEX connections_clear ON aerie.connections (tenant_id) WHERE sealed IS NULL;

ALTER TABLE aerie.mailbox
    ADD COLUMN sealed bytea,
    ALTER COLUMN payload DROP NOT NULL,
    ADD CONSTRAINT mailbox_sealed_has_no_clear CHECK (sealed IS NULL OR (
        payload IS NULL AND sender_verkey IS NULL AND thread_id IS NULL)),
    ADD CONSTRAINT mailbox_sealed_or_clear CHECK (sealed IS NOT NULL OR payload IS NOT NULL);

CREATE INDEX mailbox_clear ON aerie.mailbox (tenant_id) WHERE sealed IS NULL;

ALTER TABLE aerie.oob_invitations
    ADD COLUMN sealed             bytea,
    ADD COLUMN invitation_id_hash bytea,
    ALTER COLUMN invitation_id DROP NOT NULL,
    ALTER COLUMN invitation DROP NOT NULL,
    ADD CONSTRAINT oob_invitations_sealed_has_no_clear CHECK (sealed IS NULL OR (
        invitation_id IS NULL AND invitation IS NULL AND attached_message IS NULL AND failure_reason IS NULL
        AND reuse_message_id IS NULL AND invitation_id_hash IS NOT NULL)),
    ADD CONSTRAINT oob_invitations_sealed_or_clear CHECK (sealed IS NOT NULL OR invitation IS NOT NULL);

CREATE UNIQUE INDEX oob_invitations_invitation_id_hash ON aerie.oob_invitations (tenant_id, invitation_id_hash);
CREATE INDEX oob_invitations_clear ON aerie.oob_invitations (tenant_id) WHERE sealed IS NULL;

ALTER TABLE aerie.tenant_settings
    ADD COLUMN sealed bytea,
    ALTER COLUMN value DROP NOT NULL,
    ADD CONSTRAINT tenant_settings_sealed_has_no_clear CHECK (sealed IS NULL OR value IS NULL),
    ADD CONSTRAINT tenant_settings_sealed_or_clear CHECK (sealed IS NOT NULL OR value IS NOT NULL);

CREATE INDEX tenant_settings_clear ON aerie.tenant_settings (tenant_id) WHERE sealed IS NULL;

-- The background re-encryption finds the tenants that still have clear rows without seeing any
-- row: only tenant ids come out, and the owner's policies show it only the clear rows.
DO $$
BEGIN
    EXECUTE format('CREATE POLICY owner_clear_lookup ON aerie.connections FOR SELECT TO %I USING (sealed IS NULL)', current_user);
    EXECUTE format('CREATE POLICY owner_clear_lookup ON aerie.mailbox FOR SELECT TO %I USING (sealed IS NULL)', current_user);
    EXECUTE format('CREATE POLICY owner_clear_lookup ON aerie.oob_invitations FOR SELECT TO %I USING (sealed IS NULL)', current_user);
    EXECUTE format('CREATE POLICY owner_clear_lookup ON aerie.tenant_settings FOR SELECT TO %I USING (sealed IS NULL)', current_user);
END
$$;

CREATE FUNCTION aerie.tenants_with_clear_rows(after_tenant uuid, max_rows integer)
    RETURNS TABLE (tenant_id uuid)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
        SELECT t.tenant_id FROM (
            (SELECT DISTINCT tenant_id FROM aerie.connections WHERE sealed IS NULL AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
            UNION (SELECT DISTINCT tenant_id FROM aerie.mailbox WHERE sealed IS NULL AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
            UNION (SELECT DISTINCT tenant_id FROM aerie.oob_invitations WHERE sealed IS NULL AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
            UNION (SELECT DISTINCT tenant_id FROM aerie.tenant_settings WHERE sealed IS NULL AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
        ) t ORDER BY t.tenant_id LIMIT least(max_rows, 1000)
    $$;

REVOKE ALL ON FUNCTION aerie.tenants_with_clear_rows(uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION aerie.tenants_with_clear_rows(uuid, integer) TO aerie_runtime;
