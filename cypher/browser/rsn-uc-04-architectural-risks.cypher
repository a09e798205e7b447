// RSN-UC-04 What are our top architectural risks? (most depended-upon services and infrastructure)
// dependents = distinct direct CALLS/DEPENDS_ON sources; incidents = FailurePatterns AFFECTED/CAUSED_BY it.
:param tenant => 'acme';
:param snapshot => 9007199254740990;
:param clearance => ['public', 'internal'];
:param top => 3;
MATCH (t:Entity {tenant_id: $tenant})
WHERE t:Service OR t:Infrastructure
CALL custom.substrate_retrieval_dependencies_callers($tenant, $snapshot, $clearance, t.ceid)
YIELD target
WITH t, count(DISTINCT target.ceid) AS dependents
ORDER BY dependents DESC, t.ceid
LIMIT $top
OPTIONAL MATCH (f:FailurePattern:Entity)-[r:AFFECTED|CAUSED_BY]->(t)
WHERE r.tenant_id = $tenant AND r.valid_from_v <= $snapshot
  AND (r.valid_to_v IS NULL OR r.valid_to_v > $snapshot)
WITH t, dependents, collect(DISTINCT f.ceid) AS incidents
RETURN t.ceid AS component, dependents, size(incidents) AS incidents, incidents AS incident_ids
ORDER BY dependents DESC, component;
