// name: graph/write_mark
// version: 1
// mode: write
// params: version, tenant, content_hash
// returns: nothing
// serves: write path (crash-safe commit, issue 16)
// doc: Inside a snapshot's Neo4j write transaction: the proof that the transaction committed. The reconciler completes a PostgreSQL write intent whose mark exists and discards one whose mark does not.
MERGE (m:WriteMark {version: $version})
SET m.tenant = $tenant, m.content_hash = $content_hash
