// name: temporal/evidence_sources
// version: 1
// mode: read
// params: tenant
// returns: source, edges
// serves: `substrate audit evidence` (which git sources a tenant holds)
// doc: The git sources (source ids starting with "git:") that asserted relationships in a tenant, with how many.
MATCH (a:Entity {tenant_id: $tenant})-[r]->()
WHERE r.source STARTS WITH 'git:' AND r.tenant_id = $tenant
RETURN r.source AS source, count(r) AS edges
ORDER BY source
