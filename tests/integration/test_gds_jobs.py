"""The GDS jobs against the real Neo4j + GDS and PostgreSQL + pgvector.

A throw-away tenant gets a small topology through the real write path: two clusters of three
services (payments: checkout, cart, payments; discovery: search, catalog, recommendations), one
orders database four services depend on, an unowned recommendations service that caused two
incidents, and catalog with two PRIMARY_OWNER claims. Snapshot 1 has one more edge into the
database, closed again in snapshot 2, so projections can be checked AS OF a version. The
tenant's nodes and summary rows are deleted at the end (snapshot history stays).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from gds_jobs import centrality, risks
from gds_jobs.__main__ import main
from gds_jobs.communities import Community, detect_communities, run_communities, summarise
from gds_jobs.pagerank import rank_nodes, service_ranks
from gds_jobs.projection import GRAPH_PREFIX
from gds_jobs.risks import RiskItem, rank_risks
from gds_jobs.runtime import JobContext, job_context, job_scope
from gds_jobs.summaries import fan_in
from substrate.db import neo4j_driver
from substrate.embeddings import TextEmbedder, make_embedder
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.retrieval.global_search import global_search
from substrate.retrieval.scope import ReadScope
from substrate.settings import Settings

pytestmark = pytest.mark.integration

SERVICES = {
    "checkout": "Web checkout flow that takes card payments from shoppers",
    "payments": "Card payment processing, authorisation and refunds",
    "cart": "Shopping cart contents and totals before checkout",
    "search": "Full-text product search over the catalogue",
    "catalog": "Product catalogue with descriptions and prices",
    "recommendations": "Personalised product recommendations for browsing shoppers",
}
INFRA = {  # key: (name, kind)
    "orders-db": ("Orders DB", "database"),
    "payments-cache": ("Payments cache", "cache"),
    "search-index": ("Search index", "search-engine"),
    "cluster-b": ("Cluster B", "host"),
}
PAYMENTS = {"service:checkout", "service:cart", "service:payments"}
DISCOVERY = {"service:search", "service:catalog", "service:recommendations"}
EXTRA_EDGE = "service:search-[DEPENDS_ON]->infra:orders-db@test"  # live in v1 only


def _edge(rel: str, src: str, dst: str) -> EdgeRecord:
    return EdgeRecord(rel, src, dst, f"test://{src}/{rel}/{dst}#L1", source="test")


def _nodes() -> list[NodeRecord]:
    nodes = [NodeRecord(f"service:{n}", "Service", {"name": n, "description": d})
             for n, d in SERVICES.items()]
    nodes += [NodeRecord(f"infra:{k}", "Infrastructure", {"name": n, "kind": kind})
              for k, (n, kind) in INFRA.items()]
    nodes += [NodeRecord(f"team:{t}", "Team", {"name": f"Team {t}"})
              for t in ("payments", "search", "data")]
    nodes += [
        NodeRecord("incident:recs-outage", "FailurePattern", {
            "name": "Recommendations outage", "date": "2026-10-01", "severity": "sev1",
            "summary": "Recommendations overloaded the orders database"}),
        NodeRecord("incident:recs-timeouts", "FailurePattern", {
            "name": "Recommendation timeouts", "date": "2026-11-02", "severity": "sev2",
            "summary": "Recommendation requests timed out under load"}),
    ]
    return nodes


def _edges() -> list[EdgeRecord]:
    s = "service:"
    pairs = [
        ("CALLS", "checkout", s + "payments"), ("CALLS", "checkout", s + "cart"),
        ("CALLS", "cart", s + "payments"), ("DEPENDS_ON", "checkout", "infra:payments-cache"),
        ("DEPENDS_ON", "payments", "infra:payments-cache"), ("CALLS", "search", s + "catalog"),
        ("CALLS", "recommendations", s + "catalog"), ("CALLS", "recommendations", s + "search"),
        ("DEPENDS_ON", "search", "infra:search-index"),
        ("DEPENDS_ON", "recommendations", "infra:search-index"),
    ]
    edges = [_edge(rel, s + src, dst) for rel, src, dst in pairs]
    edges += [_edge("DEPENDS_ON", s + n, "infra:orders-db")
              for n in ("checkout", "payments", "catalog", "recommendations", "search")]
    edges += [_edge("HOSTS", "infra:cluster-b", s + n) for n in ("search", "catalog")]
    edges += [_edge("OWNS", "team:payments", s + n) for n in ("checkout", "payments", "cart")]
    edges += [_edge("OWNS", "team:search", s + n) for n in ("search", "catalog")]
    edges += [_edge("PRIMARY_OWNER", "team:payments", s + "payments"),
              _edge("PRIMARY_OWNER", "team:search", s + "catalog"),
              _edge("PRIMARY_OWNER", "team:data", s + "catalog")]
    edges += [_edge("CAUSED_BY", f"incident:{i}", s + "recommendations")
              for i in ("recs-outage", "recs-timeouts")]
    edges += [_edge("AFFECTED", "incident:recs-outage", "infra:orders-db"),
              _edge("AFFECTED", "incident:recs-timeouts", s + "search")]
    return edges


def _cleanup(settings: Settings, tenant: str) -> None:
    driver = neo4j_driver(settings)
    try:
        driver.execute_query("MATCH (n:Entity {tenant_id: $tenant}) DETACH DELETE n",
                             {"tenant": tenant})
    finally:
        driver.close()
    with psycopg.connect(settings.postgres_dsn, autocommit=True) as conn:
        for table in ("community_summaries", "community_state", "raptor_nodes",
                      "gds_node_metrics", "risk_rankings"):
            conn.execute(f"DELETE FROM {table} WHERE tenant_id = %s", (tenant,))


@pytest.fixture(scope="module")
def tenant(stack: Settings) -> Iterator[tuple[str, int, int]]:
    """(tenant, v1, v2): v1 with the extra edge into the database, v2 without it."""
    name = f"gdstest-{uuid.uuid4().hex[:10]}"
    driver = neo4j_driver(stack)
    try:
        writer = GraphWriter(stack, driver, embedder=None)
        first = writer.commit(GraphBatch(_nodes(), _edges()), source="test", tenant=name)
        second = writer.commit(GraphBatch(), source="test", tenant=name, deletes=[EXTRA_EDGE])
        assert first.snapshot_version is not None and second.snapshot_version is not None
        yield name, first.snapshot_version, second.snapshot_version
    finally:
        driver.close()
        _cleanup(stack, name)


@pytest.fixture(scope="module")
def ctx(stack: Settings) -> Iterator[JobContext]:
    with job_context(stack) as context:
        yield context


@pytest.fixture(scope="module")
def scope(stack: Settings, tenant: tuple[str, int, int]) -> ReadScope:
    return job_scope(stack, tenant[0])


@pytest.fixture(scope="module")
def embedder(stack: Settings) -> TextEmbedder:
    return make_embedder(stack)


@pytest.fixture(scope="module")
def stored(ctx: JobContext, scope: ReadScope, embedder: TextEmbedder) -> list[Community]:
    return [item.community for item in run_communities(ctx, scope, embedder)]


def _our_graphs(ctx: JobContext, tenant: str) -> list[str]:
    return [g.graph_name for g in ctx.gds.graph.list()
            if g.graph_name.startswith(GRAPH_PREFIX) and tenant in g.graph_name]


def test_scope_defaults_to_the_tenants_newest_snapshot(
    stack: Settings, tenant: tuple[str, int, int], scope: ReadScope
) -> None:
    assert scope.version == tenant[2]
    assert scope.clearance == ("public", "internal")


def test_pagerank_and_in_degree_per_service(ctx: JobContext, scope: ReadScope) -> None:
    ranks = {r.ceid: r for r in service_ranks(ctx, scope)}
    assert set(ranks) == PAYMENTS | DISCOVERY
    assert {c: r.in_degree for c, r in ranks.items()} == {
        "service:payments": 2, "service:catalog": 2, "service:cart": 1, "service:search": 1,
        "service:checkout": 0, "service:recommendations": 0}
    pr = {c: r.pagerank for c, r in ranks.items()}
    assert pr["service:payments"] > pr["service:cart"] > pr["service:checkout"]
    assert pr["service:catalog"] > pr["service:search"] > pr["service:recommendations"]
    assert _our_graphs(ctx, scope.tenant) == []  # every projection was dropped


def test_betweenness_is_sampled_above_the_exact_limit_with_a_fixed_seed(
    ctx: JobContext, scope: ReadScope, monkeypatch: pytest.MonkeyPatch
) -> None:
    exact_metrics = centrality.compute_metrics(ctx, scope)
    exact = {m.ceid: m.betweenness for m in exact_metrics}
    assert centrality.betweenness_sampling(len(exact)) == (None, None)
    assert {m.betweenness_sources for m in exact_metrics} == {None}
    monkeypatch.setattr(centrality, "EXACT_BETWEENNESS_MAX_NODES", 3)
    monkeypatch.setattr(centrality, "BETWEENNESS_SOURCES", 4)
    said: list[tuple[str, dict[str, Any]]] = []

    def sampled_run() -> dict[str, float]:
        metrics = centrality.compute_metrics(
            ctx, scope, lambda step, **kw: said.append((step, kw)))
        return {m.ceid: m.betweenness for m in metrics}

    first, second = sampled_run(), sampled_run()
    assert ("betweenness sampled", {"sources": 4, "nodes": len(exact)}) in said
    assert first == second and set(first) == set(exact)  # same seed, same estimate
    assert all(v >= 0 for v in first.values())
    assert _our_graphs(ctx, scope.tenant) == []
    # the estimate is recorded with the metrics and named in a ranking's betweenness note
    sampled = centrality.run_centrality(ctx, scope)
    assert {m.betweenness_sources for m in sampled} == {4}
    with psycopg.connect(ctx.settings.postgres_dsn) as conn:
        stored = conn.execute(
            "SELECT DISTINCT betweenness_sources FROM gds_node_metrics WHERE tenant_id = %s "
            "AND snapshot_version = %s", (scope.tenant, scope.version)).fetchall()
    assert stored == [(4,)]
    notes = [f.note for i in rank_risks(ctx, scope, limit=20) for f in i.factors
             if f.factor == "betweenness"]
    assert notes and all(n.endswith("(estimated from 4 sampled source nodes)") for n in notes)
    monkeypatch.undo()
    centrality.run_centrality(ctx, scope)  # exact again: the stored rows say so
    with psycopg.connect(ctx.settings.postgres_dsn) as conn:
        stored = conn.execute(
            "SELECT DISTINCT betweenness_sources FROM gds_node_metrics WHERE tenant_id = %s "
            "AND snapshot_version = %s", (scope.tenant, scope.version)).fetchall()
    assert stored == [(None,)]


def test_projection_is_as_of_the_snapshot_version(
    ctx: JobContext, scope: ReadScope, tenant: tuple[str, int, int]
) -> None:
    _, v1, v2 = tenant
    at = {v: {r.ceid: r for r in rank_nodes(ctx, ReadScope(scope.tenant, v, scope.clearance,
                                                           True), ("Infrastructure",))}
          for v in (v1, v2)}
    assert at[v1]["infra:orders-db"].in_degree == 5
    assert at[v2]["infra:orders-db"].in_degree == 4
    overall = rank_nodes(ctx, scope, ("Service", "Infrastructure"))
    assert overall[0].ceid == "infra:orders-db"


def _services(community: Community) -> set[str]:
    return {m for m in community.members if m.startswith("service:")}


def test_communities_are_the_two_clusters(
    ctx: JobContext, scope: ReadScope, stored: list[Community]
) -> None:
    top = [c for c in stored if c.level == 1]
    assert sorted((_services(c) for c in top), key=sorted) == sorted(
        [PAYMENTS, DISCOVERY], key=sorted)
    again = summarise(ctx, scope, detect_communities(ctx, scope))  # deterministic rerun
    assert [i.community for i in again] == stored
    by_id = {i.community.community_id: i.summary for i in again}
    payments = next(c for c in top if "service:payments" in c.members)
    text = by_id[payments.community_id].text
    assert "payments (called by cart, checkout)" in text and "Team payments owns" in text
    discovery = next(c for c in top if "service:recommendations" in c.members)
    text = by_id[discovery.community_id].text
    assert "No recorded owner: recommendations" in text
    assert "Recommendations outage (2026-10-01, sev1) caused by recommendations" in text


def test_summaries_are_stored_with_embeddings(
    stack: Settings, scope: ReadScope, stored: list[Community], embedder: TextEmbedder
) -> None:
    with psycopg.connect(stack.postgres_dsn) as conn:
        rows = conn.execute(
            "SELECT community_id, level, snapshot_version, vector_dims(embedding), members "
            "FROM community_summaries WHERE tenant_id = %s ORDER BY level, community_id",
            (scope.tenant,)).fetchall()
        model = conn.execute("SELECT model_id, dimensions FROM embedding_models "
                             "WHERE index_name = 'community_summaries'").fetchone()
    assert sorted((r[0], r[1]) for r in rows) == sorted((c.community_id, c.level) for c in stored)
    assert {r[2] for r in rows} == {scope.version}
    assert {r[3] for r in rows} == {stack.embedding_dim}
    assert all(m["ceid"] and m["label"] for r in rows for m in r[4])
    assert model == (embedder.model_id, embedder.dimensions)


@pytest.mark.parametrize(("query", "cluster"), [
    ("card payment processing at checkout", PAYMENTS),
    ("product search and personalised recommendations", DISCOVERY),
])
def test_global_search_finds_the_related_community(
    stack: Settings, scope: ReadScope, stored: list[Community], embedder: TextEmbedder,
    query: str, cluster: set[str],
) -> None:
    rows = asyncio.run(global_search(stack, scope.tenant, embedder.embed_query(query), 2,
                                     model_id=embedder.model_id))
    assert [r["rank"] for r in rows] == [1, 2]
    assert {m["ceid"] for m in rows[0]["members"]} >= cluster
    assert rows[0]["score"] > rows[1]["score"]
    other = asyncio.run(global_search(stack, scope.tenant + "-nobody",
                                      embedder.embed_query(query), 2))
    assert other == []


def _factor(item: RiskItem, name: str) -> dict[str, Any]:
    return next(f for f in item.to_dict()["factors"] if f["factor"] == name)


def test_risks_rank_the_shared_database_and_the_unowned_incident_service_first(
    ctx: JobContext, scope: ReadScope
) -> None:
    items = rank_risks(ctx, scope, limit=5)
    assert [i.ceid for i in items[:2]] == ["infra:orders-db", "service:recommendations"]
    db, recs = items[0], items[1]
    spof = _factor(db, "single_point_of_failure")
    assert spof["value"] == 4 and not spof["truncated"]
    assert {h["from"] for h in spof["evidence"]} == {
        "service:checkout", "service:payments", "service:catalog", "service:recommendations"}
    assert all(h["evidence_ref"].startswith("test://") and h["to"] == "infra:orders-db"
               for h in spof["evidence"])
    assert _factor(recs, "ownership")["value"] == 0
    incidents = _factor(recs, "incidents")
    assert incidents["value"] == {"caused_by": 2, "affected": 0}
    assert {h["type"] for h in incidents["evidence"]} == {"CAUSED_BY"}
    catalog = next(i for i in rank_risks(ctx, scope, limit=20) if i.ceid == "service:catalog")
    conflict = _factor(catalog, "ownership")
    assert "conflicting PRIMARY_OWNER" in conflict["note"] and len(conflict["evidence"]) == 2
    assert _our_graphs(ctx, scope.tenant) == []


def test_risks_read_in_chunks_rank_as_one_read_does(
    ctx: JobContext, scope: ReadScope, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = [i.to_dict() for i in rank_risks(ctx, scope, limit=20)]
    said: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(risks, "FACT_CHUNK", 2)
    chunked = [i.to_dict() for i in rank_risks(ctx, scope, limit=20,
                                               progress=lambda s, **kw: said.append((s, kw)))]
    assert chunked == whole and len(whole) >= 3
    facts = next(kw for s, kw in said if s == "facts read")
    assert facts["entities"] > 2 and facts["most_dependents"] == 4  # orders-db's four
    top3 = [i.to_dict() for i in rank_risks(ctx, scope, limit=3)]
    assert top3 == whole[:3]
    # the chunked run counts fan-in (gds/max_fan_in) as the facts' dependents give it
    for ceid in sorted(m.ceid for m in centrality.compute_metrics(ctx, scope)):
        facts = ctx.rows("gds/entity_facts", scope, ceids=[ceid])
        counted = ctx.rows("gds/max_fan_in", scope, ceids=[ceid])[0]["most"]
        assert counted == (fan_in(facts[0]) if facts else 0), ceid


def test_cli_prints_the_job_result(
    scope: ReadScope, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pagerank", "--tenant", scope.tenant]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["snapshot_version"] == scope.version
    assert out["result"][0]["ceid"] in {"service:payments", "service:catalog"}
    assert main(["risks", "--tenant", scope.tenant + "-nobody"]) == 1


def test_job_timings(
    ctx: JobContext, scope: ReadScope, embedder: TextEmbedder, stored: list[Community],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Figures, not assertions: how long the jobs take on this graph (embedder warm)."""
    figures = {}
    for name, job in (("communities", lambda: run_communities(ctx, scope, embedder)),
                      ("risks", lambda: rank_risks(ctx, scope)),
                      ("pagerank", lambda: service_ranks(ctx, scope))):
        started = time.perf_counter()
        job()
        figures[name] = round(time.perf_counter() - started, 3)
    with capsys.disabled():
        print(f"\n[gds_jobs timings, {len(SERVICES) + len(INFRA)} nodes] {figures}")


def test_a_namespace_is_no_risk_and_a_graph_of_no_dependency_ranks(
        ctx: JobContext, stack: Settings) -> None:
    """A Kubernetes namespace HOSTS the services it groups: that is no dependency of theirs,
    so it is not ranked (Online Boutique ranked its implicit default namespace first). With it
    left out, a tenant whose only edges were a namespace's has no dependency at all, and the
    metrics still compute (GDS's articulation points fail on a graph of no relationship)."""
    tenant = f"t-ns-{uuid.uuid4().hex[:8]}"
    driver = neo4j_driver(stack)
    try:
        ns = NodeRecord("infra:namespace-default", "Infrastructure",
                        {"name": "default namespace", "kind": "namespace"})
        GraphWriter(stack, driver).commit(GraphBatch(
            nodes=[ns, *(NodeRecord(f"service:{n}", "Service", {"name": n})
                         for n in ("web", "api"))],
            edges=[_edge("HOSTS", "infra:namespace-default", f"service:{n}")
                   for n in ("web", "api")]), source="test", tenant=tenant)
        ranked = rank_risks(ctx, job_scope(stack, tenant), limit=5)
        assert "infra:namespace-default" not in [i.ceid for i in ranked]
    finally:
        driver.execute_query("MATCH (n {tenant_id: $t}) DETACH DELETE n", t=tenant)
        driver.close()
