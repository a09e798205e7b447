// RSN-UC-01 What does a service depend on? (local GraphRAG)
// custom.substrate_retrieval_dependencies = 1 hop; _depth2 / _depth3 go further.
// snapshot 9007199254740990 = the live graph; any snapshot version pins the answer.
:param tenant => 'acme';
:param snapshot => 9007199254740990;
:param clearance => ['public', 'internal'];
:param service => 'service:payment';
CALL custom.substrate_retrieval_dependencies($tenant, $snapshot, $clearance, $service)
YIELD target, depth, hops
RETURN target.ceid AS dependency, target.label AS kind, depth,
       [h IN hops | h.type + ' ' + h.from + ' -> ' + h.to] AS path,
       [h IN hops | h.evidence_ref] AS evidence;
