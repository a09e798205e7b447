// name: graph/live_chunks
// version: 1
// mode: read
// params: tenant
// returns: ceid, props, embedding
// serves: enrichment (cross-document and LLM chunk edges, chunk-graph-rag.md)
// doc: Every live chunk of a tenant with its text properties and embedding, in ceid order.
MATCH (n:Chunk)
WHERE n.tenant_id = $tenant AND n.valid_to_v IS NULL AND n.embedding IS NOT NULL
RETURN n.ceid AS ceid,
       apoc.map.removeKeys(properties(n), ['embedding', 'iv_from', 'iv_to', 'sources',
         'tenant_id', 'valid_from_ts', 'valid_to_ts', 'valid_from_v', 'valid_to_v',
         'confidence', 'provenance']) AS props,
       n.embedding AS embedding
ORDER BY n.ceid
