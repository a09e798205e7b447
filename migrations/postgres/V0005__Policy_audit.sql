-- Every policy decision of the read/write path: allowed, denied or redacted, with who asked,
-- the request it belonged to and why. Queryable through GET /admin/audit (role admin).
CREATE TABLE IF NOT EXISTS policy_audit (
  id          bigserial PRIMARY KEY,
  at          timestamptz NOT NULL DEFAULT now(),
  principal   text        NOT NULL,
  request_id  text        NOT NULL,
  tenant_id   text,
  action      text        NOT NULL,
  decision    text        NOT NULL CHECK (decision IN ('allowed', 'denied', 'redacted')),
  reason      text        NOT NULL,
  detail      jsonb
);
CREATE INDEX IF NOT EXISTS policy_audit_at ON policy_audit (at DESC);
CREATE INDEX IF NOT EXISTS policy_audit_request ON policy_audit (request_id);
CREATE INDEX IF NOT EXISTS policy_audit_principal ON policy_audit (principal, at DESC);
