"""The NL->Cypher schema after a write (issue 12): reading it scans the view's live
relationships (seconds on a large tenant). An unpinned read after a write reads it again at
once when the last reading was quick (a small tenant), else goes on with the schema held
while it is read again behind it; a pinned read gets its own snapshot's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from neo4j import Driver

from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.nl_cypher import schema as nl_schema
from substrate.retrieval.nl_cypher.schema import load_schema, question_schema, refreshed
from substrate.retrieval.scope import resolve_scope
from substrate.services import open_services
from substrate.settings import Settings
from tests.support.graphstate import drop_tenant_graph, new_tenant

REF = "services.yaml#L{}@abc1234"


@pytest.mark.parametrize("slow", [False, True], ids=["quick-reading", "slow-reading"])
def test_an_unpinned_read_after_a_write_sees_it_at_once_or_once_read_again_behind(
        stack: Settings, driver: Driver, writer: GraphWriter, slow: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # every reading counts as slow, as a large tenant's does, or as quick (however busy the
    # machine is: the path taken must not depend on the test's timing)
    monkeypatch.setattr(nl_schema, "WAIT_BELOW_S", 0.0 if slow else 3600.0)
    tenant = new_tenant("schema")

    def schemas(*steps: str, pinned: int | None = None) -> list[set[tuple[str, str, str]]]:
        """The triples each step sees ("load", or "wait" for the background reading)."""
        services = open_services(stack, check_templates=False)

        async def run() -> list[set[tuple[str, str, str]]]:
            try:
                reader = GraphReader(services.async_driver, services.cypher)
                scope = await resolve_scope(stack, tenant, snapshot_version=pinned)
                out = []
                for step in steps:
                    if step == "wait":
                        await refreshed(scope)
                    else:
                        out.append(set((await load_schema(reader, scope))[0].triples))
                return out
            finally:
                await services.aclose()
        return asyncio.run(run())

    calls, owns = ("Service", "CALLS", "Service"), ("Team", "OWNS", "Service")
    try:
        first = writer.commit(GraphBatch(
            [NodeRecord("service:a", "Service", {"name": "a"}),
             NodeRecord("service:b", "Service", {"name": "b"})],
            [EdgeRecord("CALLS", "service:a", "service:b", REF.format(1))]),
            source="test", tenant=tenant)
        assert schemas("load") == [{calls}]
        writer.commit(GraphBatch(
            [NodeRecord("team:core", "Team", {"name": "core"})],
            [EdgeRecord("OWNS", "team:core", "service:a", REF.format(2))]),
            source="test2", tenant=tenant)
        at_once, after = schemas("load", "wait", "load")
        # slow: the schema held (the request did not wait for the scan), read again behind
        assert at_once == ({calls} if slow else {calls, owns})
        assert after == {calls, owns}
        assert schemas("load", pinned=first.snapshot_version) == [{calls}]  # its own snapshot
    finally:
        drop_tenant_graph(driver, tenant)


def test_the_schema_holds_only_the_triples_a_view_sees(
        stack: Settings, driver: Driver, writer: GraphWriter) -> None:
    """The triples come from the tenant's relationships whatever their visibility, then each
    is kept only if one relationship of it is live between elements the reader may see:
    classification, jurisdiction and validity of both ends and of the relationship."""
    tenant = new_tenant("schemaview")
    calls, owns = ("Service", "CALLS", "Service"), ("Team", "OWNS", "Service")
    depends, why = ("Service", "DEPENDS_ON", "Infrastructure"), ("Service", "WHY", "DecisionNode")

    def triples(clearance: str, jurisdictions: list[str] | None = None,
                pinned: int | None = None) -> set[tuple[str, str, str]]:
        services = open_services(stack, check_templates=False)

        async def run() -> set[tuple[str, str, str]]:
            try:
                reader = GraphReader(services.async_driver, services.cypher)
                scope = await resolve_scope(stack, tenant, snapshot_version=pinned,
                                            clearance=clearance, jurisdictions=jurisdictions)
                return set((await load_schema(reader, scope))[0].triples)
            finally:
                await services.aclose()
        return asyncio.run(run())

    nodes = [NodeRecord("service:a", "Service", {"name": "a", "classification": "public"}),
             NodeRecord("service:b", "Service", {"name": "b", "classification": "public"}),
             NodeRecord("team:secret", "Team", {"name": "secret",
                                                "classification": "restricted"}),
             NodeRecord("infra:eu-db", "Infrastructure",
                        {"name": "eu-db", "kind": "database", "classification": "public",
                         "jurisdiction": ["EU"]}),
             NodeRecord("adr:1", "DecisionNode", {"name": "one", "status": "accepted",
                                                  "classification": "public"})]
    edges = [EdgeRecord("CALLS", "service:a", "service:b", REF.format(1)),
             EdgeRecord("OWNS", "team:secret", "service:a", REF.format(2)),
             EdgeRecord("DEPENDS_ON", "service:a", "infra:eu-db", REF.format(3)),
             EdgeRecord("WHY", "service:b", "adr:1", REF.format(4))]
    try:
        first = writer.commit(GraphBatch(nodes, edges), source="view", tenant=tenant)
        assert triples("public", ["US"]) == {calls, why}
        assert triples("public", ["EU"]) == {calls, why, depends}
        assert triples("restricted") == {calls, why, depends, owns}
        writer.commit(GraphBatch(nodes, [e for e in edges if e.type != "WHY"]), source="view",
                      tenant=tenant, mode="sync")  # the WHY relationship ends
        assert triples("restricted") == {calls, depends, owns}
        assert triples("restricted", pinned=first.snapshot_version) == \
            {calls, why, depends, owns}
    finally:
        drop_tenant_graph(driver, tenant)


def test_past_the_name_cap_a_question_still_finds_the_entities_it_names(
        stack: Settings, driver: Driver, writer: GraphWriter,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A view with more names than the lexicon holds (``MAX_NAMES``: 20,000; a 200k-edge
    organisation has ~50,000) looks up the ids the question's phrases would have, so the
    translator knows a team past the cap; never one the reader may not see."""
    monkeypatch.setattr(nl_schema, "MAX_NAMES", 1)
    tenant = new_tenant("schemacap")
    nodes = [NodeRecord("service:ledger-db-sync", "Service", {"name": "ledger-db-sync"}),
             NodeRecord("team:t0813-inventory", "Team", {"name": "t0813-inventory"}),
             NodeRecord("team:vault", "Team", {"name": "vault",
                                               "classification": "restricted"}),
             NodeRecord("adr:0003", "DecisionNode", {"name": "Use Kafka", "status": "accepted"})]
    edges = [EdgeRecord("OWNS", "team:t0813-inventory", "service:ledger-db-sync", REF.format(1)),
             EdgeRecord("OWNS", "team:vault", "service:ledger-db-sync", REF.format(2)),
             EdgeRecord("WHY", "adr:0003", "service:ledger-db-sync", REF.format(3))]

    def phrases(question: str, clearance: str = "internal") -> dict[tuple[str, ...], Any]:
        services = open_services(stack, check_templates=False)

        async def run() -> dict[tuple[str, ...], Any]:
            try:
                reader = GraphReader(services.async_driver, services.cypher)
                scope = await resolve_scope(stack, tenant, clearance=clearance)
                held, _ = await load_schema(reader, scope)
                assert held.names_capped and len(held.entities) <= 4  # one entity's phrases
                return (await question_schema(reader, scope, question)).entities
            finally:
                await services.aclose()
        return asyncio.run(run())

    try:
        writer.commit(GraphBatch(nodes, edges), source="cap", tenant=tenant)
        found = phrases("Which services does team t0813-inventory own?")
        assert found[("t0813", "inventory")] == [("team:t0813-inventory", "Team")]
        found = phrases("What does ledger-db-sync depend on, and why was adr 3 accepted?")
        assert found[("ledger", "db", "sync")] == [("service:ledger-db-sync", "Service")]
        assert found[("adr", "3")] == [("adr:0003", "DecisionNode")]
        assert ("vault",) not in phrases("Which services does team vault own?")
        assert phrases("Which services does team vault own?", "restricted")[("vault",)] == \
            [("team:vault", "Team")]
    finally:
        drop_tenant_graph(driver, tenant)
