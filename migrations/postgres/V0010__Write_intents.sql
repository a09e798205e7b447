-- Crash-safe writes: a batch is first recorded here (committed) before its Neo4j transaction,
-- which carries a (:WriteMark {version}) node. After the Neo4j commit the intent becomes the
-- snapshot row, its change log and its audit entry in one PostgreSQL transaction. An intent
-- left by a crash is completed (mark found in Neo4j) or discarded (no mark: Neo4j rolled
-- back) by the next writer or the reconciler, under the writers' advisory lock.
CREATE TABLE IF NOT EXISTS write_intents (
  version       bigint PRIMARY KEY,
  tenant_id     text        NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  valid_at      timestamptz NOT NULL,
  source        text        NOT NULL,
  content_hash  text        NOT NULL,
  changed_nodes integer     NOT NULL,
  changed_edges integer     NOT NULL,
  note          text
);

CREATE TABLE IF NOT EXISTS write_intent_changes (
  id               bigserial PRIMARY KEY,
  intent_version   bigint NOT NULL REFERENCES write_intents (version) ON DELETE CASCADE,
  tenant_id        text   NOT NULL,
  element_kind     text   NOT NULL,
  element_id       text   NOT NULL,
  op               text   NOT NULL,
  before           jsonb,
  after            jsonb
);
CREATE INDEX IF NOT EXISTS write_intent_changes_version ON write_intent_changes (intent_version);
