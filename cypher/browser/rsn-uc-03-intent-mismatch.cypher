// RSN-UC-03 Which pull requests do not match their linked project item? (embedding similarity)
// similarity = vector.similarity.cosine of the stored embeddings, on Neo4j's 0..1 scale.
:param tenant => 'acme';
:param snapshot => 9007199254740990;
:param clearance => ['public', 'internal'];
CALL custom.substrate_retrieval_project_items($tenant, $snapshot, $clearance, 1000)
YIELD item
WITH collect(item.ceid) AS live_items
MATCH (p:PullRequest:Entity {tenant_id: $tenant})
CALL custom.substrate_retrieval_intent_pr($tenant, $snapshot, $clearance, p.ceid)
YIELD pr, props, items
UNWIND items AS link
MATCH (i:ProjectItem:Entity {tenant_id: $tenant, ceid: link.item.ceid})
WHERE i.ceid IN live_items
RETURN pr.name AS pull_request, props.summary AS summary, link.item.name AS linked_item,
       round(vector.similarity.cosine(p.embedding, i.embedding), 3) AS similarity,
       link.hop.evidence_ref AS evidence
ORDER BY similarity
LIMIT 10;
