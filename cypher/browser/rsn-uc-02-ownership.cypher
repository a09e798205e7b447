// RSN-UC-02 Who owns a service? (OWNS / PRIMARY_OWNER edges, CODEOWNERS and declared)
// source git:* = CODEOWNERS in the repository; any other source = a declared owner.
:param tenant => 'acme';
:param snapshot => 9007199254740990;
:param clearance => ['public', 'internal'];
:param service => 'service:checkout';
CALL custom.substrate_retrieval_ownership($tenant, $snapshot, $clearance, $service)
YIELD owner, hop, primary
RETURN owner.ceid AS owner, owner.label AS kind, primary, hop.type AS relation,
       hop.source AS source, hop.evidence_ref AS evidence, hop.conflict AS conflict;
