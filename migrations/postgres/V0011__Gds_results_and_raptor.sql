-- Stored results of the GDS jobs (issue 13), read by requests instead of running GDS:
-- * gds_node_metrics: PageRank, betweenness, in-degree, WCC and SCC component, articulation
--   point, one row per node per tenant, clearance level and snapshot version (the risks job
--   writes them; UC-04 rankings are derived from them);
-- * community_state: the current community of each node per tenant and clearance level (the
--   Leiden hierarchy: domain = final level, module = finest intermediate level), the
--   starting point of an incremental re-run on graph.updated (RSN-15);
-- * raptor_nodes: the RAPTOR tree (RSN-05) per tenant, clearance and snapshot: level 0 system,
--   1 service domain, 2 module cluster, 3 node; each with a summary and its embedding.
CREATE TABLE IF NOT EXISTS gds_node_metrics (
  tenant_id        text             NOT NULL,
  clearance        text             NOT NULL,
  snapshot_version bigint           NOT NULL,
  ceid             text             NOT NULL,
  name             text             NOT NULL,
  label            text             NOT NULL,
  pagerank         double precision NOT NULL,
  betweenness      double precision NOT NULL,
  in_degree        integer          NOT NULL,
  wcc              bigint           NOT NULL,
  scc              bigint           NOT NULL,
  scc_size         integer          NOT NULL,
  articulation     boolean          NOT NULL,
  computed_at      timestamptz      NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, clearance, snapshot_version, ceid)
);

CREATE TABLE IF NOT EXISTS community_state (
  tenant_id        text    NOT NULL,
  clearance        text    NOT NULL,
  ceid             text    NOT NULL,
  domain_id        text,
  module_id        text,
  snapshot_version bigint  NOT NULL,
  PRIMARY KEY (tenant_id, clearance, ceid)
);
CREATE INDEX IF NOT EXISTS community_state_domain
  ON community_state (tenant_id, clearance, domain_id);

CREATE TABLE IF NOT EXISTS raptor_nodes (
  tenant_id        text    NOT NULL,
  clearance        text    NOT NULL,
  snapshot_version bigint  NOT NULL,
  node_id          text    NOT NULL,
  level            integer NOT NULL CHECK (level BETWEEN 0 AND 3),
  parent_id        text,
  title            text    NOT NULL,
  summary          text    NOT NULL,
  members          jsonb   NOT NULL,
  embedding        vector,
  PRIMARY KEY (tenant_id, clearance, snapshot_version, node_id)
);
