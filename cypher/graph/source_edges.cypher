// name: graph/source_edges
// version: 1
// mode: read
// params: tenant, source
// returns: key, type, src, dst, source, evidence_ref, confidence, weight, props
// serves: write path (sync mode, explicit deletes)
// doc: Live relationships a source currently asserts.
MATCH (a)-[r]->(b)
WHERE r.tenant_id = $tenant AND r.source = $source AND r.valid_to_v IS NULL
RETURN r.eid AS key, type(r) AS type, a.ceid AS src, b.ceid AS dst, r.source AS source,
       r.evidence_ref AS evidence_ref, r.confidence AS confidence, r.weight AS weight,
       apoc.map.submap(properties(r), coalesce(r.prop_keys, []), null, false) AS props
