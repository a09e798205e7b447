"""The NL->Cypher schema after a write (issue 12): reading it scans the view's live
relationships (seconds on a large tenant). An unpinned read after a write reads it again at
once when the last reading was quick (a small tenant), else goes on with the schema held
while it is read again behind it; a pinned read gets its own snapshot's."""

from __future__ import annotations

import asyncio

import pytest
from neo4j import Driver

from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.nl_cypher import schema as nl_schema
from substrate.retrieval.nl_cypher.schema import load_schema, refreshed
from substrate.retrieval.scope import resolve_scope
from substrate.services import open_services
from substrate.settings import Settings
from tests.support.graphstate import drop_tenant_graph, new_tenant

REF = "services.yaml#L{}@abc1234"


@pytest.mark.parametrize("slow", [False, True], ids=["quick-reading", "slow-reading"])
def test_an_unpinned_read_after_a_write_sees_it_at_once_or_once_read_again_behind(
        stack: Settings, driver: Driver, writer: GraphWriter, slow: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    if slow:  # every reading counts as slow, as a large tenant's does
        monkeypatch.setattr(nl_schema, "WAIT_BELOW_S", 0.0)
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
