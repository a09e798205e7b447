-- Stored results of the GDS risks job (python -m gds_jobs risks): one ranking per tenant,
-- clearance and snapshot version. /search's risks strategy (RSN-UC-04) reads the newest
-- ranking at or below the reader's snapshot and clearance; no GDS projection per request.
CREATE TABLE IF NOT EXISTS risk_rankings (
  tenant_id         text             NOT NULL,
  clearance         text             NOT NULL,
  snapshot_version  bigint           NOT NULL,
  computed_at       timestamptz      NOT NULL DEFAULT now(),
  seconds           double precision NOT NULL,
  items             jsonb            NOT NULL,
  PRIMARY KEY (tenant_id, clearance, snapshot_version)
);
