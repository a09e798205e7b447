"""Clearance levels that see the same graph share one run of the GDS jobs (gds_jobs/levels.py).

A throw-away tenant with public and confidential services (and unclassified ones, read as
internal): ``public``, ``internal`` and ``confidential`` each see a different graph, while
``restricted`` sees what ``confidential`` sees. The communities job and the risks job run once
per distinct view; the copies at ``restricted`` equal what ``confidential`` stored (ids, text,
embeddings), and no level's rows name a node above it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest

from gds_jobs import risks_store
from gds_jobs.communities import run_every_level
from gds_jobs.levels import level_groups
from gds_jobs.runtime import job_context, job_scope
from substrate.db import neo4j_driver
from substrate.embeddings import make_embedder
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from tests.support.graphstate import drop_tenant_graph

pytestmark = pytest.mark.integration

SERVICES = {"web": "public", "search": "public", "catalogue": "public", "orders": None,
            "billing": None, "ledger": None, "vault": "confidential", "hsm": "confidential"}
EDGES = [("web", "search"), ("web", "catalogue"), ("search", "catalogue"), ("orders", "billing"),
         ("billing", "ledger"), ("ledger", "orders"), ("billing", "vault"), ("vault", "hsm"),
         ("ledger", "hsm"), ("web", "orders")]
TABLES = ("community_summaries", "raptor_nodes", "community_state", "risk_rankings",
          "gds_node_metrics")


def _batch() -> GraphBatch:
    nodes = [NodeRecord(f"service:{n}", "Service",
                        {"name": n, "description": f"The {n} service",
                         **({"classification": c} if c else {})})
             for n, c in SERVICES.items()]
    edges = [EdgeRecord("CALLS", f"service:{a}", f"service:{b}", f"test://{a}/{b}#L1",
                        source="test") for a, b in EDGES]
    return GraphBatch(nodes, edges)


@pytest.fixture(scope="module")
def tenant(stack: Settings) -> Iterator[str]:
    name = f"t-levels-{uuid.uuid4().hex[:8]}"
    driver = neo4j_driver(stack)
    try:
        GraphWriter(stack, driver, embedder=None).commit(_batch(), source="test", tenant=name)
        yield name
    finally:
        drop_tenant_graph(driver, name)
        driver.close()
        with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
            for table in TABLES:
                conn.execute(f"DELETE FROM {table} WHERE tenant_id = %s", (name,))


def _rows(stack: Settings, table: str, tenant: str, level: str) -> list[tuple[object, ...]]:
    """The level's rows without the clearance and timestamps, sorted."""
    with psycopg.connect(stack.postgres_dsn) as conn:
        cur = conn.execute(f"SELECT * FROM {table} WHERE tenant_id = %s AND clearance = %s",
                           (tenant, level))
        names = [d.name for d in cur.description or []]
        keep = [i for i, n in enumerate(names)
                if n not in ("clearance", "created_at", "computed_at", "seconds")]
        return sorted(tuple(str(r[i]) for i in keep) for r in cur.fetchall())


def test_levels_are_grouped_by_the_graph_they_see(stack: Settings, tenant: str) -> None:
    with job_context(stack) as ctx:
        groups = level_groups(ctx, job_scope(stack, tenant))
    assert groups == [["public"], ["internal"], ["confidential", "restricted"]]


def test_a_level_that_sees_the_same_graph_gets_a_copy_of_the_run(stack: Settings,
                                                                 tenant: str) -> None:
    steps: list[str] = []
    with job_context(stack) as ctx:
        stored = run_every_level(ctx, job_scope(stack, tenant), make_embedder(stack),
                                 progress=lambda step, **_: steps.append(step))
        assert risks_store.store_every_level(ctx, tenant) == 4
    assert steps.count("copied") == 1  # restricted: copied from confidential
    assert steps.count("summarised") == 3  # one run per distinct view
    by_level = {level: {i.community.community_id for i in stored if i.clearance == level}
                for level in ("public", "internal", "confidential", "restricted")}
    assert by_level["restricted"] == by_level["confidential"] and by_level["confidential"]
    assert by_level["internal"] != by_level["confidential"]
    for table in TABLES:
        confidential = _rows(stack, table, tenant, "confidential")
        assert confidential, table
        assert _rows(stack, table, tenant, "restricted") == confidential, table
    for level, hidden in (("public", ("orders", "vault")), ("internal", ("vault", "hsm"))):
        text = " ".join(" ".join(r) for t in TABLES for r in _rows(stack, t, tenant, level))
        assert not any(f"service:{h}" in text for h in hidden), (level, hidden)
