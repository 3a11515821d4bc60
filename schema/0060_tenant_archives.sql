-- Tenant archives: export, import and move (docs/OPERATIONS.md, "Moving a tenant").
--
-- `moving`: a tenant whose archive is being imported by another server. It is frozen like a
-- suspended one (no calls; its inbound answered 503 so peers retry), and stays so until the
-- destination confirms the import and the source shreds it, or the operator resumes it.
ALTER TABLE aerie.tenants DROP CONSTRAINT tenants_status_check;
ALTER TABLE aerie.tenants ADD CONSTRAINT tenants_status_check CHECK (status IN ('active', 'suspended', 'moving'));

-- Archives imported here, by their random id, so one file is imported once. Names no tenant:
-- it outlives the tenant (a deleted tenant's archive is still not imported twice).
CREATE TABLE aerie.imported_archives (
    archive_id  bytea       PRIMARY KEY CHECK (octet_length(archive_id) = 16),
    imported_at timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT ON aerie.imported_archives TO aerie_runtime;

-- The keys of tenants moved away, as SHA-256 of the verkey, until the grace period ends: their
-- inbound is answered 503 (retry; the shared endpoint's proxy retries on the other server)
-- instead of the 400 of an unknown key. Nothing of the tenant is readable from them.
CREATE TABLE aerie.moved_keys (
    verkey_hash bytea       PRIMARY KEY CHECK (octet_length(verkey_hash) = 32),
    until       timestamptz NOT NULL
);
GRANT SELECT, INSERT, UPDATE, DELETE ON aerie.moved_keys TO aerie_runtime;
