"""Renames in place carry identity forward in history replays (issue 9).

retail-store-sample-app, 2023-04-16 .. 2023-04-22: on 2023-04-17 (merge 91d7383, release
0.3.0) ``dist/kubernetes/deploy.yaml`` renamed its RabbitMQ StatefulSet ``rabbitmq`` to
``orders-rabbitmq`` (same image ``rabbitmq:3-management``, same file) while the Compose files
kept declaring ``rabbitmq`` (and the orders Helm chart, rendered, already declared
``orders-rabbitmq``: the bundle's declaration moved to it). The replay links the two with a
``RENAMED_TO`` edge whose
evidence is the line naming the new one at the renaming commit (it resolves: ``substrate
audit evidence`` audits the replay's rename links too); both entities stay live with their
own histories, and the link outlives the later commits of the window (the replay's sync mode
does not withdraw it).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from substrate.connectors.evidence_audit import REF
from substrate.connectors.git_ingest import ingest_git
from substrate.connectors.gitcmd import run_git
from substrate.graph.writer import GraphWriter
from substrate.settings import PROJECT_ROOT, Settings
from tests.support import devset
from tests.support.graphstate import drop_tenant_graph, new_tenant

pytestmark = pytest.mark.integration

CLI = PROJECT_ROOT / ".substrate" / "venv" / "bin" / "substrate"
REPO = "retail-store-sample-app"
WINDOW = ("2023-04-16T23:00:00Z", "2023-04-22")
RENAMING_COMMIT = "91d73834f044bf6a4740a0ce83492662a32e253f"


@pytest.fixture(scope="module")
def replay(stack: Settings, driver: Driver, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[str, Path, list[str]]]:
    repo = devset.clone(REPO, tmp_path_factory.mktemp("devset"))
    tenant = new_tenant("renames")
    said: list[str] = []
    ingest_git(GraphWriter(stack, driver, embedder=None), repo, history=True,
               since=WINDOW[0], until=WINDOW[1], tenant=tenant, progress=said.append)
    yield tenant, repo, said
    drop_tenant_graph(driver, tenant)


def links(driver: Driver, tenant: str) -> list[dict[str, Any]]:
    rows, _, _ = driver.execute_query(
        "MATCH (o:Entity {tenant_id: $t})-[r:RENAMED_TO]->(n:Entity {tenant_id: $t}) "
        "RETURN o.ceid AS old, n.ceid AS new, r.evidence_ref AS ref, r.source AS source, "
        "r.commit AS commit, r.kind AS kind, r.from_path AS path, r.valid_to_v IS NULL AS live,"
        " r.valid_from_ts AS at, o.valid_to_v IS NULL AS old_live, "
        "n.valid_to_v IS NULL AS new_live", t=tenant)
    return [r.data() for r in rows]


def test_an_entity_renamed_in_place_is_linked_to_its_new_name(
    driver: Driver, replay: tuple[str, Path, list[str]],
) -> None:
    tenant, repo, said = replay
    found = links(driver, tenant)
    assert [(f["old"], f["new"]) for f in found] == [("infra:rabbitmq",
                                                     "infra:orders-rabbitmq")], found
    link = found[0]
    assert link["kind"] == "same image" and link["path"] == "dist/kubernetes/deploy.yaml"
    assert link["commit"] == RENAMING_COMMIT and link["source"] == f"git:{REPO}:renames"
    assert link["live"] and link["old_live"] and link["new_live"]  # both still declared
    assert str(link["at"]).startswith("2023-04-17")
    m = REF.match(link["ref"])
    assert m is not None and m["path"] == "dist/kubernetes/deploy.yaml"
    line = run_git(repo, "show", f"{m['commit']}:{m['path']}").decode().splitlines()[
        int(m["line"]) - 1]
    assert "orders-rabbitmq" in line
    assert any("renamed infra:rabbitmq -> infra:orders-rabbitmq" in s for s in said)
    # the link was written once and outlived the window's later commits
    assert sum(" renamed " in s for s in said) == 1


def test_the_audit_checks_the_rename_links(replay: tuple[str, Path, list[str]]) -> None:
    tenant, repo, _ = replay
    done = subprocess.run([str(CLI), "audit", "evidence", "--tenant", tenant, "--repo",
                           str(repo)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    sources = {s["source"]: s for s in report["sources"]}
    assert set(sources) == {f"git:{REPO}", f"git:{REPO}:renames"}
    assert sources[f"git:{REPO}:renames"]["refs"] == 1
    assert report["share"] == 1.0 and report["refs"] > 1
