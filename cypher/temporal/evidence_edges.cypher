// name: temporal/evidence_edges
// version: 1
// mode: read
// params: tenant, source
// returns: type, src, dst, src_name, dst_name, evidence_ref, evidence_refs, props, live
// serves: `substrate audit evidence` (issue 9: every evidence ref of a git source resolves)
// doc: Every relationship one source ever asserted in a tenant, live or closed, with its evidence refs and fact properties.
CALL () {
  MATCH (a:Entity {tenant_id: $tenant})-[r]->(b)
  WHERE r.source = $source
  RETURN a, r, b
  UNION ALL
  MATCH (a:Chunk {tenant_id: $tenant})-[r]->(b)
  WHERE r.source = $source
  RETURN a, r, b
}
WITH a, r, b WHERE r.tenant_id = $tenant
RETURN type(r) AS type, a.ceid AS src, b.ceid AS dst, a.name AS src_name, b.name AS dst_name,
       r.evidence_ref AS evidence_ref, coalesce(r.evidence_refs, []) AS evidence_refs,
       apoc.map.submap(properties(r), coalesce(r.prop_keys, []), null, false) AS props,
       r.valid_to_v IS NULL AS live
