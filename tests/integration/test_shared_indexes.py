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
from substrate.retrieval.linking import link_mentions
from substrate.retrieval.service import ReadService
from substrate.services import open_services
from substrate.settings import Settings

CROWD = 60  # more than 4 × k (k = 5) nodes of another tenant nearer to the question
WORD = f"hello{uuid.uuid4().hex[:10]}"  # in one node of the whole index


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
        _service("greeter", f"Says {WORD}.")]), source="test", tenant=small)
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


def _keyword_rows(stack: Settings, tenant: str, lucene: str, pool: int) -> list[dict[str, Any]]:
    async def run() -> list[dict[str, Any]]:
        services = open_services(stack, check_templates=False)
        try:
            read = ReadService(services)
            scope = await read.scope(tenant)
            return await read.reader.rows("retrieval/keyword_entities", scope, k=5, pool=pool,
                                          lucene=lucene)
        finally:
            await services.aclose()
    return asyncio.run(run())


def test_the_full_text_read_says_whether_a_wider_one_could_find_more(
        stack: Settings, tenants: tuple[str, str]) -> None:
    """``candidates`` is how many the shared index gave; ``tenant_rows`` reads a wider pool
    only when it is the whole pool. With none of the tenant's, one row with a null score."""
    crowd, small = tenants
    crowded = _keyword_rows(stack, small, "ledger", pool=20)  # the crowd's 60 fill the pool
    assert crowded[0]["candidates"] == 20
    assert all(r["score"] is None for r in crowded) or \
        [r["entity"]["ceid"] for r in crowded] == ["service:settlement"]
    hello = _keyword_rows(stack, small, WORD, pool=20)  # one match in the whole index
    assert [(r["entity"]["ceid"], r["candidates"]) for r in hello] == [("service:greeter", 1)]
    none = _keyword_rows(stack, crowd, WORD, pool=20)  # a match, not the crowd's
    assert len(none) == 1 and none[0]["score"] is None and none[0]["candidates"] == 1


@pytest.fixture(scope="module")
def name_crowd(stack: Settings) -> Iterator[tuple[str, str, str]]:
    """A tenant with 40 services named ``<word>-<i>``, written before a small tenant's one
    ``<word>-hub``: the entity_names index gives the crowd's first."""
    word = f"vault{uuid.uuid4().hex[:8]}"
    crowd, small = f"t-crowd-{uuid.uuid4().hex[:8]}", f"t-small-{uuid.uuid4().hex[:8]}"
    driver = neo4j_driver(stack)
    writer = GraphWriter(stack, driver)
    writer.commit(GraphBatch(nodes=[_service(f"{word}-{i}", "Keeps secrets.")
                                    for i in range(40)]), source="test", tenant=crowd)
    writer.commit(GraphBatch(nodes=[_service(f"{word}-hub", "Keeps secrets.")]),
                  source="test", tenant=small)
    yield word, crowd, small
    for t in (crowd, small):
        driver.execute_query("MATCH (n {tenant_id: $t}) DETACH DELETE n", t=t)
    driver.close()


def _linked(stack: Settings, tenant: str, mention: str) -> dict[str, Any] | None:
    async def run() -> dict[str, Any] | None:
        services = open_services(stack, check_templates=False)
        try:
            read = ReadService(services)
            scope = await read.scope(tenant)
            return (await link_mentions(read.reader, scope, [mention]))[0]
        finally:
            await services.aclose()
    return asyncio.run(run())


def test_entity_linking_reads_past_another_tenants_names(
        stack: Settings, name_crowd: tuple[str, str, str]) -> None:
    """Linking read the index's 25 best names over all tenants and kept this tenant's: the
    crowd's 40 filled them, and the small tenant's own service was not found."""
    word, crowd, small = name_crowd
    linked = _linked(stack, small, word)
    assert linked is not None and linked["ceid"] == f"service:{word}-hub", linked
    crowded = _linked(stack, crowd, word)
    assert crowded is not None and crowded["ceid"].startswith(f"service:{word}-")
    assert crowded["ceid"] != f"service:{word}-hub"
