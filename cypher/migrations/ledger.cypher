// name: migrations/ledger
// version: 1
// mode: read
// params:
// returns: version, description, checksum, applied_at, duration_ms
// serves: migrations
// doc: The applied Neo4j migrations in order (the ledger chain).
MATCH (m:__Migration)
RETURN m.version AS version, m.description AS description, m.checksum AS checksum,
       toString(m.applied_at) AS applied_at, m.duration_ms AS duration_ms
ORDER BY m.version
