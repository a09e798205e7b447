"""What every GDS job run guarantees, on the real stack: a run that fails inside GDS (or is
interrupted) leaves no projection in the catalog; two overlapping cron runs of one job for one
tenant do not both run (the second exits 75 with one JSON error line, the first completes);
the output is progress lines on stderr and one JSON line on stdout. And the risks job's stored
results on the demo graph carry the structural risks with their evidence (UC-04 reads them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from neo4j.exceptions import ClientError

from gds_jobs.guard import JobBusy, exclusive
from gds_jobs.projection import GRAPH_PREFIX, projected
from gds_jobs.risks_store import compute_and_store
from gds_jobs.runtime import JobContext, job_context, job_scope
from substrate.settings import Settings
from tests.support.gateway_client import gateway

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def ctx(stack: Settings) -> Iterator[JobContext]:
    with job_context(stack) as context:
        yield context


def _ours(ctx: JobContext, tenant: str) -> list[str]:
    return [g.graph_name for g in ctx.gds.graph.list()
            if g.graph_name.startswith(GRAPH_PREFIX) and f"-{tenant}-" in g.graph_name]


def test_a_failed_gds_run_leaves_no_projection(stack: Settings, ctx: JobContext) -> None:
    scope = job_scope(stack, stack.tenant, clearance="internal")
    with pytest.raises(ClientError), projected(ctx, scope, job="leiden", undirected=True) as g:
        assert _ours(ctx, stack.tenant) == [g.name()]
        ctx.gds.leiden.mutate(g, "community", relationship_weight_property="no-such-property")
    assert _ours(ctx, stack.tenant) == []
    with pytest.raises(KeyboardInterrupt), projected(ctx, scope, job="leiden",
                                                     undirected=True):
        raise KeyboardInterrupt  # an interrupted run drops it too
    assert _ours(ctx, stack.tenant) == []


def _job(stack: Settings, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "gds_jobs", *args], env={
        **os.environ, **stack.env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_overlapping_runs_do_not_both_run(stack: Settings) -> None:
    # the first run rebuilds the demo's communities at every level (a minute or more): the
    # second starts once the first holds the lock, well inside that run
    first = _job(stack, "communities", "--tenant", stack.tenant)
    assert first.stderr is not None
    line = first.stderr.readline()  # "[communities] locked: ..." once it holds the lock
    assert "locked" in line, line
    second = _job(stack, "communities", "--tenant", stack.tenant)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 75 and out == "", (out, err)
    assert json.loads(err)["error"]["code"] == "job_running"
    assert first.poll() is None  # the first one is still at work
    out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    assert len(out.strip().splitlines()) == 1  # one JSON line
    result = json.loads(out)
    assert result["job"] == "communities" and result["result"]
    steps = [s["step"] for s in result["steps"]]
    assert steps.index("memory estimate") < steps.index("leiden")
    assert "[communities] raptor tree" in err


def test_a_run_waits_for_no_one_while_another_holds_the_lock(stack: Settings) -> None:
    with exclusive(stack, "centrality", stack.tenant):
        busy = _job(stack, "centrality", "--tenant", stack.tenant, "--clearance", "internal")
        out, err = busy.communicate(timeout=120)
    assert busy.returncode == 75 and out == ""
    assert json.loads(err)["error"]["code"] == "job_running"
    done = _job(stack, "centrality", "--tenant", stack.tenant, "--clearance", "internal")
    out, err = done.communicate(timeout=300)
    assert done.returncode == 0, err
    steps = [s["step"] for s in json.loads(out)["steps"]]
    assert steps.index("memory estimate") < steps.index("pagerank")
    assert "articulation points" in steps


def test_the_lock_is_held_per_job_and_tenant_and_released(stack: Settings) -> None:
    with exclusive(stack, "communities", "tenant-a"):
        with pytest.raises(JobBusy), exclusive(stack, "communities", "tenant-a"):
            pass
        with exclusive(stack, "communities", "tenant-b"), exclusive(stack, "risks",
                                                                    "tenant-a"):
            pass
    with exclusive(stack, "communities", "tenant-a"):
        pass  # released on exit


def _factor(items: list[dict[str, Any]], ceid: str, name: str) -> dict[str, Any]:
    item = next(i for i in items if i["ceid"] == ceid)
    return next(f for f in item["factors"] if f["factor"] == name)


@pytest.fixture(scope="module")
def stored(stack: Settings, ctx: JobContext) -> list[dict[str, Any]]:
    scope = job_scope(stack, stack.tenant, clearance="internal")
    compute_and_store(ctx, scope)
    with psycopg.connect(stack.postgres_dsn) as conn:
        row = conn.execute("SELECT items FROM risk_rankings WHERE tenant_id = %s AND "
                           "clearance = 'internal' AND snapshot_version = %s",
                           (stack.tenant, scope.version)).fetchone()
        metrics = conn.execute("SELECT count(*) FROM gds_node_metrics WHERE tenant_id = %s "
                               "AND clearance = 'internal' AND snapshot_version = %s",
                               (stack.tenant, scope.version)).fetchone()
    assert row is not None and metrics is not None and metrics[0] == 47  # 34 + 13 (demo)
    items: list[dict[str, Any]] = row[0]
    return items


def test_demo_risks_carry_cycles_stale_adrs_and_cut_points_with_evidence(
    stored: list[dict[str, Any]]
) -> None:
    # catalog -> pricing -> promotions -> catalog (docker-compose CALLS): a dependency cycle
    cycle = _factor(stored, "service:pricing", "dependency_cycle")
    assert cycle["value"] == 3 and "catalog" in cycle["note"] and "promotions" in cycle["note"]
    assert cycle["evidence"] and all(h["evidence_ref"] for h in cycle["evidence"])
    # ADR-0006 (mobile BFF) is deprecated at HEAD and nothing accepted replaces it
    stale = _factor(stored, "service:mobile-bff", "stale_adr")
    assert "deprecated" in stale["note"] and stale["evidence"][0]["type"] == "WHY"
    cut = [i["ceid"] for i in stored
           if any(f["factor"] == "articulation_point" for f in i["factors"])]
    assert "service:payment" in cut
    kafka = _factor(stored, "infra:kafka", "single_point_of_failure")
    assert kafka["value"] == 12  # EXPECTED.md: kafka has 12 dependents at HEAD
    assert any(f["factor"] == "betweenness" for i in stored for f in i["factors"])


def test_uc04_answers_from_the_stored_ranking(stack: Settings,
                                              stored: list[dict[str, Any]]) -> None:
    with gateway(stack, headers={"X-Clearance": "internal"}) as client:
        body = client.post("/search", json={
            "query": "What are our top 3 architectural risks?",
            "options": {"strategies": ["risks"], "rerank": False}}).json()
    risks = body["strategies"]["risks"]
    assert risks["status"] == "ok" and "stored ranking of the GDS risks job" in risks["note"]
    assert [r["id"] for r in body["results"][:3]] == [i["ceid"] for i in stored[:3]]
