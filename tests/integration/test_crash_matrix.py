"""One write, both stores, or neither: an ingest killed (``os._exit``) at every step of the
commit leaves no trace or a trace that reconciliation completes; afterwards graph, snapshots,
change log, audit and events agree, with no orphaned and no lost batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from neo4j import Driver

from substrate.cypher import CypherLibrary
from substrate.graph import faults
from substrate.graph.reconcile import reconcile, write_marks
from substrate.graph.writer import MAXV
from substrate.settings import Settings
from tests.support.graphstate import (
    assert_change_log_matches_graph,
    create_consumer,
    delete_consumer,
    drain_events,
    new_tenant,
    snapshot_versions,
    versions_once,
)

pytestmark = pytest.mark.integration

# what reconciliation does after the crash at each point (nothing: the snapshot was made)
EXPECTED = {"after_intent": "discarded", "after_neo4j_commit": "completed",
            "after_snapshot": "nothing", "after_publish": "nothing"}


def batch_file(tmp: Path, n: int = 40) -> Path:
    lines = [{"kind": "node", "label": "Service", "ceid": f"service:s{i}",
              "props": {"name": f"s{i}"}} for i in range(n)]
    lines += [{"kind": "edge", "type": "CALLS", "src": f"service:s{i}",
               "dst": f"service:s{i + 1}", "evidence_ref": f"apm:s{i}"} for i in range(n - 1)]
    path = tmp / "batch.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def ingest(path: Path, tenant: str, fault: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SUBSTRATE_TENANT": tenant}
    env.pop("SUBSTRATE_FAULT", None)
    if fault:
        env["SUBSTRATE_FAULT"] = fault
    cli = Path(sys.executable).with_name("substrate")
    return subprocess.run([str(cli), "ingest", "jsonl", str(path)], env=env,
                          capture_output=True, text=True, timeout=180, check=False)


def orphans(driver: Driver, tenant: str, versions: list[int]) -> list[Any]:
    """Elements of the tenant stamped with a version PostgreSQL has no snapshot of."""
    nodes, _, _ = driver.execute_query(
        "MATCH (n {tenant_id: $t}) UNWIND n.iv_from + coalesce(n.iv_to, []) AS v "
        "WITH DISTINCT v WHERE v < $open AND NOT v IN $vs RETURN v", t=tenant, vs=versions,
        open=MAXV)
    rels, _, _ = driver.execute_query(
        "MATCH ()-[r {tenant_id: $t}]->() UNWIND [r.valid_from_v, r.valid_to_v] AS v "
        "WITH DISTINCT v WHERE v IS NOT NULL AND NOT v IN $vs RETURN v", t=tenant, vs=versions)
    return [r["v"] for r in nodes] + [r["v"] for r in rels]


def audited(pg: psycopg.Connection[Any], tenant: str) -> list[int]:
    rows = pg.execute("SELECT target FROM audit_log WHERE tenant_id = %s AND action = "
                      "'snapshot.commit' ORDER BY id", (tenant,)).fetchall()
    return [int(str(r[0]).removeprefix("snapshot:")) for r in rows]


@pytest.mark.parametrize("fault", faults.POINTS)
def test_a_crash_at_each_commit_step_leaves_no_lost_or_orphaned_batch(
    fault: str, stack: Settings, driver: Driver, pg: psycopg.Connection[Any], tmp_path: Path,
) -> None:
    tenant = new_tenant("crash")
    durable = f"crash-{tenant}"
    create_consumer(stack, durable)
    path = batch_file(tmp_path)
    try:
        crashed = ingest(path, tenant, fault)
        assert crashed.returncode == faults.EXIT_CODE, crashed.stderr[-2000:]
        # settled by this reconcile or, if it came first, by the gateway's outbox loop
        reconcile(stack.postgres_dsn, driver, CypherLibrary.load())
        assert pg.execute("SELECT count(*) FROM write_intents").fetchone() == (0,)
        versions = snapshot_versions(pg, tenant)
        assert len(versions) == (0 if EXPECTED[fault] == "discarded" else 1)
        assert orphans(driver, tenant, versions) == []
        again = ingest(path, tenant, None)  # the resumed run: writes only what is missing
        assert again.returncode == 0, again.stderr[-2000:]
        versions = snapshot_versions(pg, tenant)
        assert len(versions) == 1, f"the batch was written {len(versions)} times"
        (version,) = versions
        rows = assert_change_log_matches_graph(driver, pg, tenant, version)
        assert len([r for r in rows if r[0] == "node"]) == 40
        assert orphans(driver, tenant, versions) == []
        assert audited(pg, tenant) == [version]
        assert pg.execute("SELECT count(*) FROM write_intents").fetchone() == (0,)
        assert version not in write_marks(driver, CypherLibrary.load())
        seen = drain_events(stack, durable, tenant, {version})
        assert versions_once(seen) == {version: 1}
    finally:
        delete_consumer(stack, durable)


def test_the_reconciler_reports_what_it_did(
    stack: Settings, driver: Driver, pg: psycopg.Connection[Any], tmp_path: Path,
) -> None:
    """With the outbox loop's reconciler racing, at least the outcome is checked per kind:
    a completed intent is audited as reconciled, a discarded one leaves no audit row."""
    tenant = new_tenant("crash-audit")
    path = batch_file(tmp_path, 5)
    assert ingest(path, tenant, "after_neo4j_commit").returncode == faults.EXIT_CODE
    reconcile(stack.postgres_dsn, driver, CypherLibrary.load())
    rows = pg.execute("SELECT detail FROM audit_log WHERE tenant_id = %s AND action = "
                      "'snapshot.commit'", (tenant,)).fetchall()
    assert [r[0]["reconciled"] for r in rows] == [True]
    other = new_tenant("crash-none")
    assert ingest(path, other, "after_intent").returncode == faults.EXIT_CODE
    reconcile(stack.postgres_dsn, driver, CypherLibrary.load())
    assert pg.execute("SELECT count(*) FROM audit_log WHERE tenant_id = %s",
                      (other,)).fetchone() == (0,)
    assert snapshot_versions(pg, other) == []
