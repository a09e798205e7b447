-- Snapshot history: one row per committed write batch; versions are global and monotonic.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE IF NOT EXISTS snapshots (
  version       bigint PRIMARY KEY,
  tenant_id     text        NOT NULL,
  committed_at  timestamptz NOT NULL DEFAULT now(),
  valid_at      timestamptz NOT NULL,            -- real-world time (commit time on replay)
  source        text        NOT NULL,
  content_hash  text        NOT NULL,
  changed_nodes integer     NOT NULL,
  changed_edges integer     NOT NULL,
  note          text,
  published     boolean     NOT NULL DEFAULT false  -- outbox: graph.updated sent on NATS
);
CREATE INDEX IF NOT EXISTS snapshots_tenant_valid_at ON snapshots (tenant_id, valid_at);
CREATE INDEX IF NOT EXISTS snapshots_unpublished ON snapshots (version) WHERE NOT published;
CREATE INDEX IF NOT EXISTS snapshots_source_hash ON snapshots (tenant_id, source, content_hash);

-- Before/after of every element a snapshot changed.
CREATE TABLE IF NOT EXISTS change_log (
  id               bigserial PRIMARY KEY,
  snapshot_version bigint NOT NULL REFERENCES snapshots (version),
  tenant_id        text   NOT NULL,
  element_kind     text   NOT NULL CHECK (element_kind IN ('node', 'edge')),
  element_id       text   NOT NULL,
  op               text   NOT NULL CHECK (op IN ('add', 'update', 'close')),
  before           jsonb,
  after            jsonb
);
CREATE INDEX IF NOT EXISTS change_log_snapshot ON change_log (snapshot_version);
CREATE INDEX IF NOT EXISTS change_log_element ON change_log (tenant_id, element_id);
