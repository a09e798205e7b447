-- Cross-process read-your-writes on a Neo4j cluster (issue 14): the Neo4j bookmarks of the
-- write transaction that made each snapshot, recorded with the snapshot row so that its
-- graph.updated event carries them whoever publishes the outbox (the writer, another writer,
-- or the outbox loop after a NATS outage). A gateway's routed read at that snapshot passes
-- them, so a lagging cluster member waits until it has the write. Empty: unknown (a snapshot
-- from before this migration, or one the reconciler completed after a crashed writer).
ALTER TABLE snapshots ADD COLUMN IF NOT EXISTS neo4j_bookmarks text[] NOT NULL DEFAULT '{}';
