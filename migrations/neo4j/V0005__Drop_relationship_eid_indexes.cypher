// The relationships' eid indexes cost every relationship written an index entry (a ~60-byte
// string key), and nothing reads through them: the write path finds a relationship from its
// end nodes' (tenant_id, ceid) uniqueness seeks (graph/live_edges, graph/close_edges v2).
DROP INDEX rel_calls_eid IF EXISTS;
DROP INDEX rel_depends_on_eid IF EXISTS;
DROP INDEX rel_imports_eid IF EXISTS;
DROP INDEX rel_owns_eid IF EXISTS;
DROP INDEX rel_primary_owner_eid IF EXISTS;
DROP INDEX rel_hosts_eid IF EXISTS;
DROP INDEX rel_why_eid IF EXISTS;
DROP INDEX rel_caused_by_eid IF EXISTS;
DROP INDEX rel_affected_eid IF EXISTS;
DROP INDEX rel_excepts_eid IF EXISTS;
DROP INDEX rel_mentions_eid IF EXISTS;
DROP INDEX rel_changes_eid IF EXISTS;
DROP INDEX rel_links_to_eid IF EXISTS;
DROP INDEX rel_asserts_eid IF EXISTS;
DROP INDEX rel_has_chunk_eid IF EXISTS;
DROP INDEX rel_supersedes_eid IF EXISTS;
DROP INDEX rel_authored_eid IF EXISTS;
DROP INDEX rel_member_of_eid IF EXISTS;
DROP INDEX rel_in_community_eid IF EXISTS;
DROP INDEX rel_alias_of_eid IF EXISTS;
DROP INDEX rel_references_eid IF EXISTS;
DROP INDEX rel_elaborates_eid IF EXISTS;
DROP INDEX rel_contradicts_eid IF EXISTS;
DROP INDEX rel_part_of_eid IF EXISTS;
DROP INDEX rel_similar_to_eid IF EXISTS;
DROP INDEX rel_sequence_eid IF EXISTS;
