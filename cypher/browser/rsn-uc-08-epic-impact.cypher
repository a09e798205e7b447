// RSN-UC-08 Which services does an epic affect? (project item -> intent assertion -> services)
// depth 0 = asserted by the epic's intent; depth 1 = calls or depends on an asserted one.
:param tenant => 'acme';
:param snapshot => 9007199254740990;
:param clearance => ['public', 'internal'];
:param epic => 'item:shop-10';
CALL custom.substrate_retrieval_epic_impact($tenant, $snapshot, $clearance, $epic)
YIELD service, via, intent, depth, hops
RETURN service.ceid AS service, depth, via, intent,
       [h IN hops | h.type + ' ' + h.from + ' -> ' + h.to] AS path;
