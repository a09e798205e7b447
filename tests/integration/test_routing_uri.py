"""A Neo4j routing URI (``neo4j://``) works unchanged: the gateway answers over it (reads go
out as routed read transactions), a write through it is read back at once (the driver's
bookmarks), and ``substrate doctor`` checks a stack addressed that way. The driver's protocol
log shows what a cluster would get: every read path routed as a read (mode 'r' on its BEGIN,
or on the RUN of an auto-commit read), and a writer's next read carrying the bookmark of its
write."""

from __future__ import annotations

import ast
import asyncio
import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from substrate.db import neo4j_driver
from substrate.doctor.checks import run_doctor
from substrate.graph.records import GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.retrieval.cypher_run import run_cypher
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.scope import resolve_scope
from substrate.services import open_services
from substrate.settings import Settings
from tests.support.gateway_client import gateway
from tests.support.graphstate import drop_tenant_graph, new_tenant
from tests.support.local_procs import gateway as second_gateway

pytestmark = pytest.mark.integration


def routed(stack: Settings) -> Settings:
    return Settings.from_env({**stack.env, "NEO4J_URI": stack.neo4j_uri.replace(
        "bolt://", "neo4j://")})


def test_a_gateway_on_a_routing_uri_answers_as_on_bolt(stack: Settings, tmp_path: Path) -> None:
    uri = routed(stack).neo4j_uri
    assert uri.startswith("neo4j://")
    def targets(body: dict[str, Any]) -> list[str]:
        return sorted(d["target"]["ceid"] for d in body["dependencies"])

    with gateway(stack) as direct:
        expected = targets(direct.get("/dependencies/checkout").json())
    with second_gateway(tmp_path, stack.tenant, NEO4J_URI=uri) as client:
        r = client.get("/dependencies/checkout")
        assert r.status_code == 200, r.text
        assert targets(r.json()) == expected and expected
        assert client.post("/search", json={"query": "Who owns checkout?"}).status_code == 200


def test_a_write_is_read_back_through_the_routing_driver(stack: Settings) -> None:
    driver = neo4j_driver(routed(stack))
    tenant = f"t-routing-{uuid.uuid4().hex[:8]}"
    try:
        driver.execute_query("CREATE (:RoutingProbe {tenant_id: $t})", t=tenant)
        records, _, _ = driver.execute_query(
            "MATCH (n:RoutingProbe {tenant_id: $t}) RETURN count(n) AS n", t=tenant,
            routing_="r")
        assert records[0]["n"] == 1
    finally:
        driver.execute_query("MATCH (n:RoutingProbe {tenant_id: $t}) DELETE n", t=tenant)
        driver.close()


def test_doctor_checks_a_stack_addressed_by_a_routing_uri(stack: Settings) -> None:
    findings = run_doctor(routed(stack))
    assert [f for f in findings if not f.ok] == []


# --- what goes over Bolt: read transactions routed as reads, bookmarks after writes ----------
class BoltLog(logging.Handler):
    """The driver's protocol log (``C: BEGIN {...}``, ``S: SUCCESS {'bookmark': ...}``)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def begins(self) -> list[dict[str, Any]]:
        return [ast.literal_eval(line.split("C: BEGIN ", 1)[1])
                for line in self.lines if "C: BEGIN " in line]

    def autocommit_runs(self) -> list[dict[str, Any]]:
        """The extras of auto-commit queries (``C: RUN <query> <params> <extra>``); a RUN
        inside a transaction has none (``{}``)."""
        out = []
        for line in self.lines:
            if "C: RUN " not in line:
                continue
            at = len(line)
            while (at := line.rfind(" {", 0, at)) > 0:
                try:
                    extra = ast.literal_eval(line[at + 1:])
                except (ValueError, SyntaxError):
                    continue
                if extra:
                    out.append(extra)
                break
        return out

    def bookmark_of(self, marker: str) -> tuple[str, list[dict[str, Any]]]:
        """The bookmark the server returned on COMMIT of the transaction that ran a query
        containing ``marker``, and the BEGINs of the transactions after it."""
        ran, bookmark, after = False, "", []
        for line in self.lines:
            if "C: BEGIN " in line and bookmark:
                after.append(ast.literal_eval(line.split("C: BEGIN ", 1)[1]))
            elif "C: BEGIN " in line:
                ran = False
            elif "C: RUN " in line and marker in line:
                ran = True
            elif "S: SUCCESS {'bookmark'" in line and ran and not bookmark:
                bookmark = ast.literal_eval(line.split("S: SUCCESS ", 1)[1])["bookmark"]
        return bookmark, after


@contextmanager
def bolt_log() -> Iterator[BoltLog]:
    handler, logger = BoltLog(), logging.getLogger("neo4j")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_the_read_paths_open_read_transactions(stack: Settings) -> None:
    """Templates (GraphReader: one auto-commit query, RUN with mode 'r') and POST /cypher
    (run_cypher: one auto-commit read since the hot-path work) are both routed as reads,
    so a routing driver sends them to the readers of the routing table."""
    services = open_services(routed(stack), check_templates=False)

    async def read() -> tuple[BoltLog, BoltLog]:
        scope = await resolve_scope(stack, stack.tenant)
        with bolt_log() as template:
            reader = GraphReader(services.async_driver, services.cypher)
            assert await reader.rows("retrieval/entity_names", scope, limit=5)
        with bolt_log() as cypher:
            result = await run_cypher(services.async_driver, scope, "MATCH (s:Service) RETURN "
                                      "s.name AS name LIMIT 3", {}, 10, 10.0, 1 << 20)
            assert result["row_count"] > 0
        await services.aclose()
        return template, cypher

    template, cypher = asyncio.run(read())
    runs = template.autocommit_runs()
    assert template.begins() == [] and runs and all(r.get("mode") == "r" for r in runs), runs
    cypher_runs = cypher.autocommit_runs()
    assert cypher.begins() == [] and cypher_runs, cypher_runs
    assert all(r.get("mode") == "r" for r in cypher_runs), cypher_runs


def test_a_writer_reads_its_own_write_by_bookmark(stack: Settings, driver: Driver) -> None:
    """GraphWriter's write transaction (the one that sets the WriteMark) feeds the driver's
    execute_query bookmark manager: every transaction after it - the mark's clearing, the
    next read - carries the write's bookmark (read-your-writes on a cluster)."""
    settings = routed(stack)
    routed_driver = neo4j_driver(settings)
    tenant = new_tenant("routing")
    try:
        with bolt_log() as log:
            GraphWriter(settings, routed_driver).commit(GraphBatch(
                [NodeRecord("service:probe", "Service", {"name": "probe"})], []),
                source="test", tenant=tenant)
            records, _, _ = routed_driver.execute_query(
                "MATCH (s:Service {tenant_id: $t, ceid: 'service:probe'}) RETURN count(s) AS n",
                t=tenant, routing_="r")
        assert records[0]["n"] == 1
        written, after = log.bookmark_of("WriteMark {version")
        assert written and after, log.lines[-30:]
        assert after[-1].get("mode") == "r", after[-1]
        assert written in after[0].get("bookmarks", []), (written, after[0])
    finally:
        routed_driver.close()
        drop_tenant_graph(driver, tenant)
