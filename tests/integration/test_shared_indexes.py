"""The vector and full-text indexes hold every tenant's nodes: a small tenant beside a larger
one still gets its own nearest nodes (``strategies_text.tenant_rows``). Before, the vector
strategy read the index's 4 × k nearest over all tenants and kept this tenant's: a tenant
whose nodes were all beyond them got no hit at all (Online Boutique's "why is registration
synchronous?" beside the devset tenants)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from substrate.db import neo4j_driver
from substrate.embeddings import make_embedder
from substrate.graph.records import GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.retrieval.context import SearchOptions
from substrate.retrieval.service import ReadService
from substrate.services import open_services
from substrate.settings import Settings

CROWD = 60  # more than 4 × k (k = 5) nodes of another tenant nearer to the question


def _service(name: str, description: str) -> NodeRecord:
    return NodeRecord(f"service:{name}", "Service", {"name": name, "description": description})


@pytest.fixture(scope="module")
def tenants(stack: Settings) -> Iterator[tuple[str, str]]:
    crowd, small = f"t-crowd-{uuid.uuid4().hex[:8]}", f"t-small-{uuid.uuid4().hex[:8]}"
    driver = neo4j_driver(stack)
    writer = GraphWriter(stack, driver, embedder=make_embedder(stack))
    writer.commit(GraphBatch(nodes=[
        _service(f"ledger-{i}", f"Reconciles the payment ledger with the bank, batch {i}.")
        for i in range(CROWD)]), source="test", tenant=crowd)
    writer.commit(GraphBatch(nodes=[
        _service("settlement", "Reconciles the payment ledger with the card schemes nightly."),
        _service("greeter", "Says hello.")]), source="test", tenant=small)
    yield crowd, small
    for t in (crowd, small):
        driver.execute_query("MATCH (n {tenant_id: $t}) DETACH DELETE n", t=t)
    driver.close()


def _search(stack: Settings, tenant: str, strategy: str) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        services = open_services(stack, check_templates=False)
        try:
            read = ReadService(services)
            scope = await read.scope(tenant)
            opts = SearchOptions(strategies=(strategy,), top_k=5)
            return await read.search("Which service reconciles the payment ledger?", scope,
                                     opts)
        finally:
            await services.aclose()
    return asyncio.run(run())


@pytest.mark.parametrize("strategy", ["vector", "keyword"])
def test_a_small_tenant_beside_a_crowd_gets_its_own_hits(
        stack: Settings, tenants: tuple[str, str], strategy: str) -> None:
    crowd, small = tenants
    body = _search(stack, small, strategy)
    assert body["strategies"][strategy]["status"] == "ok", body["strategies"]
    hits = [h["id"] for h in body["results"]]  # the one strategy's hits, in its order
    assert hits and hits[0] == "service:settlement", body["results"]
    assert all(not h.startswith("service:ledger-") for h in hits)  # never the crowd's
    crowded = [h["id"] for h in _search(stack, crowd, strategy)["results"]]
    assert len(crowded) == 5 and all(h.startswith("service:ledger-") for h in crowded)
