// RSN-UC-05 Why was this architectural decision made? (decisions, failures, exceptions, memories of a service)
:param tenant => 'acme';
:param snapshot => 9007199254740990;
:param clearance => ['public', 'internal'];
:param service => 'service:payment';
CALL custom.substrate_retrieval_memory($tenant, $snapshot, $clearance, $service)
YIELD item, kind, hop, props, superseded_by
RETURN item.ceid AS item, kind, item.name AS title, props.status AS status,
       superseded_by, hop.type AS relation, hop.evidence_ref AS evidence;
