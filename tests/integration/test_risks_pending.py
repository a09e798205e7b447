""""What are our top risks?" asked before the GDS risks job ran is answered "no ranking stored
yet", and that answer is not cached: asked again once the job has stored a ranking, the
ranking answers (before, the empty answer stayed in the cache for its TTL, 900 s).

A throw-away tenant of four services, written through the real write path; the ranking is
computed by the job's own ``store_every_level``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from gds_jobs import risks_store
from gds_jobs.runtime import job_context
from substrate.db import neo4j_driver
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from tests.support.graphstate import drop_tenant_graph
from tests.support.repo_tenant import ask

pytestmark = pytest.mark.integration

QUESTION = "What are our top architectural risks?"
CALLS = [("web", "orders"), ("web", "catalogue"), ("orders", "billing"),
         ("catalogue", "billing")]


@pytest.fixture()
def tenant(stack: Settings) -> Iterator[str]:
    name = f"t-pending-{uuid.uuid4().hex[:8]}"
    nodes = [NodeRecord(f"service:{n}", "Service", {"name": n})
             for n in ("web", "orders", "catalogue", "billing")]
    edges = [EdgeRecord("CALLS", f"service:{a}", f"service:{b}", f"test://{a}/{b}#L1",
                        source="test") for a, b in CALLS]
    driver = neo4j_driver(stack)
    try:
        GraphWriter(stack, driver, embedder=None).commit(GraphBatch(nodes, edges),
                                                         source="test", tenant=name)
        yield name
    finally:
        drop_tenant_graph(driver, name)
        driver.close()
        with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
            for table in ("risk_rankings", "gds_node_metrics"):
                conn.execute(f"DELETE FROM {table} WHERE tenant_id = %s", (name,))


def test_no_ranking_yet_is_not_cached_and_the_stored_ranking_answers_next(
        stack: Settings, tenant: str) -> None:
    before = ask(stack, tenant, QUESTION)
    assert before["answer"].startswith("No stored risk ranking"), before["answer"]
    assert f"python -m gds_jobs risks --tenant {tenant}`" in before["answer"]
    assert before["pending"] == ["risk_ranking"]
    assert before["cache"]["status"] == "not_stored"
    again = ask(stack, tenant, QUESTION)  # asked twice: still computed, never a hit
    assert not again["cache"]["hit"] and again["pending"] == ["risk_ranking"]

    with job_context(stack) as ctx:
        assert risks_store.store_every_level(ctx, tenant) == 4
    time.sleep(risks_store.NONE_TTL_S)  # the gateway remembers "none stored" this long
    after = ask(stack, tenant, QUESTION)
    assert after["answer"].startswith("Top architectural risks:"), after["answer"]
    assert "billing" in after["answer"]  # called by two of the four, calling none
    assert "pending" not in after and not after["cache"]["hit"]
