-- Backends (issue 14): a wallet backend holds one service credential and acts for many tenants,
-- naming the tenant per call. A tenant belongs to at most one backend (backend_id), set when it
-- is created (by the backend itself, or by the admin naming the owner); a backend can act only
-- for its own tenants. Global like aerie.tenants (no RLS): a backend is found by its token hash
-- before any tenant is set. Tokens are stored as hashes only.
CREATE TABLE aerie.backends (
    id          uuid        PRIMARY KEY,
    label       text        NOT NULL,
    status      text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
    token_hash  bytea       NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

GRANT SELECT, INSERT, UPDATE, DELETE ON aerie.backends TO aerie_runtime;

-- RESTRICT: a backend that still owns tenants cannot be deleted (delete or keep them first).
ALTER TABLE aerie.tenants ADD COLUMN backend_id uuid REFERENCES aerie.backends (id) ON DELETE RESTRICT;
CREATE INDEX tenants_backend ON aerie.tenants (backend_id, id) WHERE backend_id IS NOT NULL;
