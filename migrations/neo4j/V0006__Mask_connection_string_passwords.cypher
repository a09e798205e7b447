// A password inside a key=value connection string ("Server=sqldata;User Id=sa;Password=...",
// Npgsql "Host=pg;Password=...", libpq "host=db password=...", a URL's "?password=...") was
// stored as written in an entity's `env` and on a dependency edge's `address`: the connectors
// now mask it (substrate/connectors/endpoints.py, mask_passwords); this masks what is stored.
// The same pattern as endpoints.KV_PASSWORD; idempotent (a masked value stays "***").
MATCH (n:Entity)
WHERE n.env IS NOT NULL
  AND any(e IN n.env WHERE e =~ '(?is).*(password|pwd|passwd)\\s*=.*')
SET n.env = [e IN n.env | apoc.text.regreplace(e,
  '(?i)((?:^|[;?&\\s])(?:password|pwd|passwd)\\s*=\\s*)[^;&\\s]+', '$1***')];
MATCH ()-[r]->()
WHERE r.address IS NOT NULL AND r.address =~ '(?is).*(password|pwd|passwd)\\s*=.*'
SET r.address = apoc.text.regreplace(r.address,
  '(?i)((?:^|[;?&\\s])(?:password|pwd|passwd)\\s*=\\s*)[^;&\\s]+', '$1***');
