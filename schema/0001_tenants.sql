-- Tenants, the admin credential and the first tenant-owned table.
--
-- Runs as the owner role (aerie_owner), inside one transaction, after the migrator has created
-- schema "aerie" and aerie.schema_migrations. The NOLOGIN group role aerie_runtime must already
-- exist (EmbeddedPostgres creates it; on an external server the operator does).
--
-- Conventions for every later migration:
--   * a tenant-owned table has tenant_id uuid leading its primary key, ENABLE and FORCE row level
--     security, and the tenant_isolation policy below (USING and WITH CHECK);
--   * grant aerie_runtime only the privileges the server needs; it never owns anything;
--   * TenantDirectory.delete finds tenant tables through their tenant_id column, so no list of
--     tables needs maintaining.

-- Global: one row per tenant. No RLS: authentication must find a tenant before one is set.
CREATE TABLE aerie.tenants (
    id                     uuid        PRIMARY KEY,
    label                  text        NOT NULL,
    status                 text        NOT NULL DEFAULT 'active'
                                       CHECK (status IN ('active', 'suspended')),
    token_hash             bytea       NOT NULL UNIQUE,
    data_key_wrapped       bytea       NOT NULL,
    master_key_fingerprint text        NOT NULL,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now()
);

-- Global: the single admin credential (the boolean key admits exactly one row).
CREATE TABLE aerie.admin_credentials (
    singleton  boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    token_hash bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Tenant-owned: free-form settings. COLLATE "C" keeps key order (and keyset paging) independent
-- of the database locale.
CREATE TABLE aerie.tenant_settings (
    tenant_id  uuid        NOT NULL REFERENCES aerie.tenants (id),
    key        text        COLLATE "C" NOT NULL,
    value      jsonb       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, key)
);

ALTER TABLE aerie.tenant_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE aerie.tenant_settings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON aerie.tenant_settings
    USING (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid);

GRANT USAGE ON SCHEMA aerie TO aerie_runtime;
GRANT SELECT, INSERT, UPDATE, DELETE ON aerie.tenants TO aerie_runtime;
GRANT SELECT, INSERT, UPDATE ON aerie.admin_credentials TO aerie_runtime;
GRANT SELECT, INSERT, UPDATE, DELETE ON aerie.tenant_settings TO aerie_runtime;
