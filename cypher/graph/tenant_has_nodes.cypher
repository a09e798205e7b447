// name: graph/tenant_has_nodes
// version: 1
// mode: read
// params: tenant
// returns: found
// serves: write path (a write session's memory of a tenant that held no node when it began)
// doc: Whether the tenant has any node, live or closed (two seeks of the per-label tenant_id indexes). A tenant that has none when a write session first commits to it is one the session's memory knows whole: a node it did not create and an edge it did not make do not exist (substrate/graph/session_memory.py).
RETURN EXISTS { MATCH (n:Entity {tenant_id: $tenant}) }
    OR EXISTS { MATCH (c:Chunk {tenant_id: $tenant}) } AS found
