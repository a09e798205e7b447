-- Extracted items under the confidence threshold wait here until approved or rejected.
CREATE TABLE IF NOT EXISTS verification_queue (
  id           bigserial PRIMARY KEY,
  tenant_id    text        NOT NULL,
  kind         text        NOT NULL CHECK (kind IN ('node', 'edge')),
  record       jsonb       NOT NULL,
  confidence   real        NOT NULL,
  reason       text        NOT NULL,
  source       text        NOT NULL,
  status       text        NOT NULL DEFAULT 'pending'
                           CHECK (status IN ('pending', 'approved', 'rejected')),
  created_at   timestamptz NOT NULL DEFAULT now(),
  decided_at   timestamptz,
  decided_by   text,
  snapshot_version bigint
);
CREATE INDEX IF NOT EXISTS verification_queue_status ON verification_queue (tenant_id, status);
CREATE UNIQUE INDEX IF NOT EXISTS verification_queue_pending_once
  ON verification_queue (tenant_id, md5(record::text)) WHERE status = 'pending';

-- Who did what: entity merges, approvals, rejections, administrative actions.
CREATE TABLE IF NOT EXISTS audit_log (
  id        bigserial PRIMARY KEY,
  at        timestamptz NOT NULL DEFAULT now(),
  tenant_id text        NOT NULL,
  actor     text        NOT NULL,
  action    text        NOT NULL,
  target    text,
  detail    jsonb
);

-- Resumable bulk imports: the last committed line per source file.
CREATE TABLE IF NOT EXISTS ingest_progress (
  tenant_id  text NOT NULL,
  source     text NOT NULL,
  position   bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, source)
);
