// RSN-UC-07 Find all services calling a service directly (incoming CALLS / DEPENDS_ON, 1 hop)
:param tenant => 'acme';
:param snapshot => 9007199254740990;
:param clearance => ['public', 'internal'];
:param service => 'service:auth';
CALL custom.substrate_retrieval_dependencies_callers($tenant, $snapshot, $clearance, $service)
YIELD target, hops
RETURN target.ceid AS caller, target.label AS kind, hops[0].type AS relation,
       hops[0].evidence_ref AS evidence;
