-- Community summaries per clearance level and per snapshot (issue 10, policy):
-- the communities job builds one set of summaries per clearance level (each from the graph a
-- reader at that level sees, so a `public` summary never mentions an `internal` entity) and
-- keeps the sets of earlier snapshots, so a pinned read is answered from the newest set built
-- at or before its snapshot. `jurisdictions` lists, per entity the summary mentions that is
-- restricted to jurisdictions, its jurisdictions: a reader restricted to jurisdictions sees
-- a summary only when it may see every entity the summary mentions.
ALTER TABLE community_summaries
  ADD COLUMN IF NOT EXISTS clearance text NOT NULL DEFAULT 'internal'
    CHECK (clearance IN ('public', 'internal', 'confidential', 'restricted')),
  ADD COLUMN IF NOT EXISTS jurisdictions jsonb NOT NULL DEFAULT '[]'::jsonb;
ALTER TABLE community_summaries DROP CONSTRAINT IF EXISTS community_summaries_pkey;
ALTER TABLE community_summaries
  ADD PRIMARY KEY (tenant_id, clearance, snapshot_version, community_id, level);
