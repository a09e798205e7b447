// name: migrations/record
// version: 1
// mode: write
// params: version, description, checksum, duration_ms
// returns: version
// serves: migrations
// doc: Append one applied migration to the ledger chain (linked from the previous one).
OPTIONAL MATCH (prev:__Migration) WHERE NOT (prev)-[:NEXT]->()
CREATE (m:__Migration {version: $version, description: $description, checksum: $checksum,
                       applied_at: datetime(), duration_ms: $duration_ms})
FOREACH (p IN CASE WHEN prev IS NULL THEN [] ELSE [prev] END | CREATE (p)-[:NEXT]->(m))
RETURN m.version AS version
