// name: gds/classifications
// version: 1
// mode: read
// params: tenant
// returns: classification
// serves: GDS jobs: clearance levels that see the same graph share one run (gds_jobs/levels.py)
// doc: The classifications the tenant's nodes carry (unset reads as internal), any label and any snapshot: levels no classification lies between see the same nodes.
MATCH (n)
WHERE n.tenant_id = $tenant
RETURN DISTINCT coalesce(n.classification, 'internal') AS classification
ORDER BY classification
