-- A tenant's label (backends put their end users' names there) is sealed under the tenant's own
-- data key, like the rows it owns: `label_sealed`, bound to (tenant, 'tenants', 'label', tenant
-- id), written by the server, which unwraps the key to show it (admin.tenants.list/get). The
-- key's rotation (a new master key) leaves it as it is; a deleted tenant's label in a backup
-- closes with the rest of its rows once the master key is rotated.
--
-- Labels of tenants created before this release stay in `label` until the server's
-- SealingMigrationService seals them (tenants_with_clear_rows now names those tenants too).

ALTER TABLE aerie.tenants
    ADD COLUMN label_sealed bytea,
    ALTER COLUMN label DROP NOT NULL;

CREATE INDEX tenants_clear_label ON aerie.tenants (id) WHERE label IS NOT NULL;

CREATE OR REPLACE FUNCTION aerie.tenants_with_clear_rows(after_tenant uuid, max_rows integer)
    RETURNS TABLE (tenant_id uuid)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
        SELECT t.tenant_id FROM (
            (SELECT DISTINCT tenant_id FROM aerie.connections WHERE (sealed IS NULL OR their_did IS NOT NULL)
                AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
            UNION (SELECT DISTINCT tenant_id FROM aerie.mailbox WHERE (sealed IS NULL OR delivery_error IS NOT NULL)
                AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
            UNION (SELECT DISTINCT tenant_id FROM aerie.outbox WHERE (endpoint IS NOT NULL OR last_error IS NOT NULL)
                AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
            UNION (SELECT DISTINCT tenant_id FROM aerie.oob_invitations WHERE sealed IS NULL AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
            UNION (SELECT id FROM aerie.tenants WHERE label IS NOT NULL
                AND id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY id LIMIT least(max_rows, 1000))
            UNION (SELECT DISTINCT tenant_id FROM aerie.tenant_settings WHERE sealed IS NULL AND tenant_id > coalesce(after_tenant, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY tenant_id LIMIT least(max_rows, 1000))
        ) t ORDER BY t.tenant_id LIMIT least(max_rows, 1000)
    $$;

