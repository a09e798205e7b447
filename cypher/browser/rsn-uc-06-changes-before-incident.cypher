// RSN-UC-06 What changed before an incident? (relationships opened or closed in the window)
// From Neo4j's validity timestamps; property-level changes are in the PostgreSQL change log
// (GET /temporal on the gateway, or: substrate ask "What changed before ...?").
:param tenant => 'acme';
:param snapshot => 9007199254740990;
:param clearance => ['public', 'internal'];
:param incident => 'incident:2026-09-17-checkout-payment-timeouts';
:param days => 3;
MATCH (inc:FailurePattern:Entity {tenant_id: $tenant, ceid: $incident})
WITH datetime(inc.date) AS until, datetime(inc.date) - duration({days: $days}) AS since
MATCH (a:Entity)-[r]->(b:Entity)
WHERE r.tenant_id = $tenant AND a.tenant_id = $tenant
  AND coalesce(a.classification, 'internal') IN $clearance
  AND coalesce(b.classification, 'internal') IN $clearance
  AND ((r.valid_from_ts >= since AND r.valid_from_ts < until)
       OR (r.valid_to_ts >= since AND r.valid_to_ts < until))
RETURN CASE WHEN r.valid_from_ts >= since THEN 'added' ELSE 'closed' END AS change,
       coalesce(r.valid_to_ts, r.valid_from_ts) AS at_time, a.ceid AS from, type(r) AS relation,
       b.ceid AS to, r.evidence_ref AS evidence
ORDER BY at_time, from, relation, to;
