-- Every git commit a history replay has processed (with or without a resulting snapshot),
-- so a second replay skips them instead of re-diffing old states against the present.
CREATE TABLE IF NOT EXISTS ingested_commits (
  tenant_id        text NOT NULL,
  source           text NOT NULL,
  sha              text NOT NULL,
  committed_at     timestamptz NOT NULL,
  snapshot_version bigint,
  ingested_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, source, sha)
);
