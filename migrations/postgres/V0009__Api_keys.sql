-- API keys: only a salted hash of the secret is stored. The grant bounds every request made
-- with the key; X-Tenant / X-Clearance headers may only narrow it.
CREATE TABLE IF NOT EXISTS api_keys (
  id            text        PRIMARY KEY,           -- the public part: sk_<id>_<secret>
  name          text        NOT NULL,
  salt          bytea       NOT NULL,
  secret_hash   bytea       NOT NULL,              -- HMAC-SHA256(salt, secret)
  tenants       text[]      NOT NULL,              -- tenant ids, or {'*'}
  max_clearance text        NOT NULL
                CHECK (max_clearance IN ('public', 'internal', 'confidential', 'restricted')),
  roles         text[]      NOT NULL,
  jurisdictions text[]      NOT NULL DEFAULT '{}',
  created_at    timestamptz NOT NULL DEFAULT now(),
  revoked_at    timestamptz
);
