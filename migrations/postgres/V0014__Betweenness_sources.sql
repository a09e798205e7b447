-- How a metrics row's betweenness was computed: NULL when exact (a shortest-path search from
-- every node), else the number of sampled source nodes it was estimated from (the risks job
-- samples above gds_jobs/centrality.py's EXACT_BETWEENNESS_MAX_NODES). A ranking that used
-- an estimate says so in its betweenness factor's note.
ALTER TABLE gds_node_metrics ADD COLUMN IF NOT EXISTS betweenness_sources integer;
