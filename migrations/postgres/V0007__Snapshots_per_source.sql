-- Snapshot times per source: a history replay checks that the snapshots of one source stay
-- monotonic in valid_at (the latest per tenant and source is one index probe).
CREATE INDEX IF NOT EXISTS snapshots_tenant_source_valid_at ON snapshots (tenant_id, source, valid_at DESC);
