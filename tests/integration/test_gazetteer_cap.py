"""Entity linking past the gazetteer's cap (a 200k-edge organisation has ~14,000 services,
teams, repositories and infrastructure; the gazetteer holds 5,000): the question's words are
looked up by the ids they would have, in the reader's view only."""

from __future__ import annotations

import asyncio

import pytest
from neo4j import Driver

from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.retrieval import gazetteer
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.scope import resolve_scope
from substrate.services import open_services
from substrate.settings import Settings
from tests.support.graphstate import drop_tenant_graph, new_tenant


def test_a_name_past_the_cap_is_linked_by_its_id(
        stack: Settings, driver: Driver, writer: GraphWriter,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gazetteer, "MAX_NAMES", 1)
    tenant = new_tenant("gazcap")
    nodes = [NodeRecord("service:aaa-first", "Service", {"name": "aaa-first"}),
             NodeRecord("service:payments-export-9", "Service", {"name": "payments-export-9"}),
             NodeRecord("team:vault", "Team", {"name": "vault", "classification": "restricted"})]
    edges = [EdgeRecord("CALLS", "service:aaa-first", "service:payments-export-9",
                        "compose.yml#L3@abc1234"),
             EdgeRecord("OWNS", "team:vault", "service:aaa-first", "CODEOWNERS#L2@abc1234")]

    def linked(question: str, clearance: str = "internal") -> list[str]:
        services = open_services(stack, check_templates=False)

        async def run() -> list[str]:
            try:
                reader = GraphReader(services.async_driver, services.cypher)
                scope = await resolve_scope(stack, tenant, clearance=clearance)
                assert (await gazetteer.tenant_gazetteer(reader, scope)).capped
                return [e["ceid"] for e in await gazetteer.link_names(reader, scope, question)]
            finally:
                await services.aclose()
        return asyncio.run(run())

    try:
        writer.commit(GraphBatch(nodes, edges), source="gaz", tenant=tenant)
        assert linked("who owns payments export 9 service") == ["service:payments-export-9"]
        assert linked("what does vault own") == []
        assert linked("what does vault own", "restricted") == ["team:vault"]
    finally:
        drop_tenant_graph(driver, tenant)


def test_a_gazetteer_is_kept_per_jurisdiction(stack: Settings, driver: Driver,
                                              writer: GraphWriter) -> None:
    """Two readers of one clearance and different jurisdictions do not share a gazetteer:
    the EU reader's names (read first) are not linked for the US reader."""
    tenant = new_tenant("gazjur")
    nodes = [NodeRecord("service:eu-billing", "Service",
                        {"name": "eu-billing", "jurisdiction": ["EU"]}),
             NodeRecord("service:ledger", "Service", {"name": "ledger"})]
    edges = [EdgeRecord("CALLS", "service:ledger", "service:eu-billing", "compose.yml#L3@abc1234")]

    def linked(jurisdictions: list[str]) -> list[str]:
        services = open_services(stack, check_templates=False)

        async def run() -> list[str]:
            try:
                reader = GraphReader(services.async_driver, services.cypher)
                scope = await resolve_scope(stack, tenant, jurisdictions=jurisdictions)
                found = await gazetteer.link_names(reader, scope, "who calls eu billing")
                return [e["ceid"] for e in found]
            finally:
                await services.aclose()
        return asyncio.run(run())

    try:
        writer.commit(GraphBatch(nodes, edges), source="gaz", tenant=tenant)
        assert linked(["EU"]) == ["service:eu-billing"]
        assert linked(["US"]) == []
    finally:
        drop_tenant_graph(driver, tenant)
