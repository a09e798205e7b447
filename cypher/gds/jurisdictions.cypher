// name: gds/jurisdictions
// version: 1
// mode: read
// params: tenant, ceids
// returns: ceid, jurisdictions
// serves: community summaries per reader (policy: jurisdiction restrictions)
// doc: The jurisdictions of those given entities that are restricted to jurisdictions.
UNWIND $ceids AS id
MATCH (n:Entity {tenant_id: $tenant, ceid: id})
WHERE n.jurisdiction IS NOT NULL
RETURN n.ceid AS ceid, [] + n.jurisdiction AS jurisdictions
ORDER BY ceid
