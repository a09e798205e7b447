"""History you can audit (issue 9): evidence that resolves, renames, safe concurrent replays.

Two windows of devset histories (../shared/devset) are replayed into fresh tenants:
* bank-of-anthos, 2023-03-25 .. 2023-04-12 (``CODEOWNERS`` moved to ``.github/CODEOWNERS``
  on 2023-04-05): every evidence ref of its git-sourced edges must resolve (``substrate audit
  evidence``), and refs of lines written before the move name the file as it was then;
* bank-of-anthos up to 2020-03-01, where ``kubernetes-manifests/mongodb-users.yaml`` became
  ``accounts-db.yaml`` (2019-12-27) and ``redis-ledger.yaml`` became ``ledger-db.yaml``
  (2020-02-19): the renamed entities keep one identity (an ``ALIAS_OF`` with the evidence of
  the rename, the old name as an alias) and their history before the rename.
A second replay of one source is refused while one runs (CLI: one line, exit code 4) and
snapshot times stay monotonic per source, also when older commits are replayed after a newer
one.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from neo4j import Driver

from substrate.connectors.evidence_audit import REF, audit_edges, source_of
from substrate.connectors.git_ingest import ingest_git
from substrate.connectors.gitcmd import run_git
from substrate.connectors.replay_lock import replay_lock
from substrate.cypher import CypherLibrary
from substrate.errors import Conflict
from substrate.graph.writer import GraphWriter
from substrate.settings import PROJECT_ROOT, Settings
from tests.support import devset
from tests.support.gateway_client import gateway
from tests.support.graphstate import drop_tenant_graph, new_tenant

pytestmark = pytest.mark.integration

CLI = PROJECT_ROOT / ".substrate" / "venv" / "bin" / "substrate"
MOVE = ("move", "2023-03-25", "2023-04-12")  # CODEOWNERS -> .github/CODEOWNERS
BOA = ("early", None, "2020-03-01")  # two renamed datastore manifests


def clone(tmp: Path, name: str) -> Path:
    return devset.clone("bank-of-anthos", tmp / name)


@pytest.fixture(scope="module")
def replays(stack: Settings, driver: Driver, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[dict[str, tuple[str, Path]]]:
    tmp = tmp_path_factory.mktemp("devset")
    out: dict[str, tuple[str, Path]] = {}
    for name, since, until in (MOVE, BOA):
        repo, tenant = clone(tmp, name), new_tenant(f"audit-{name}")
        ingest_git(GraphWriter(stack, driver, embedder=None), repo, history=True, since=since,
                   until=until, tenant=tenant, progress=lambda _m: None)
        out[name] = (tenant, repo)
    yield out
    for tenant, _ in out.values():
        drop_tenant_graph(driver, tenant)


def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, check=False,
                          env={**os.environ, **env}, timeout=300)


def edges_of(driver: Driver, tenant: str, repo: Path) -> list[dict[str, Any]]:
    rows, _, _ = driver.execute_query(CypherLibrary.load().text("temporal/evidence_edges"),
                                      tenant=tenant, source=source_of(repo))
    return [r.data() for r in rows]


@pytest.mark.parametrize("name", [MOVE[0], BOA[0]])
def test_every_evidence_ref_resolves_at_its_commit(
    replays: dict[str, tuple[str, Path]], name: str,
) -> None:
    tenant, repo = replays[name]
    done = cli("audit", "evidence", "--tenant", tenant, "--repo", str(repo))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    report = json.loads(done.stdout)
    assert report["refs"] >= 20 and report["share"] == 1.0
    assert report["sources"][0]["failure_reasons"] == {}


def test_refs_name_the_file_as_it_was_when_the_line_was_written(
    driver: Driver, replays: dict[str, tuple[str, Path]],
) -> None:
    tenant, repo = replays[MOVE[0]]
    end = run_git(repo, "rev-list", "-1", "--first-parent", f"--until={MOVE[2]}", "HEAD")
    tree = run_git(repo, "ls-tree", "-r", "--name-only", end.decode().strip())
    now = set(tree.decode().splitlines())
    refs = {str(e["evidence_ref"]) for e in edges_of(driver, tenant, repo) if e["live"]}
    older = [r for r in refs if (m := REF.match(r)) and m["path"] not in now]
    assert any(r.startswith("CODEOWNERS#L") for r in older), sorted(refs)[:20]
    assert older, "no ref cites a file under a name it no longer has"
    for ref in older:
        m = REF.match(ref)
        assert m is not None
        run_git(repo, "cat-file", "-e", f"{m['commit']}:{m['path']}")  # exists there


def test_the_audit_reports_what_does_not_resolve(
    driver: Driver, replays: dict[str, tuple[str, Path]],
) -> None:
    tenant, repo = replays[BOA[0]]
    edges = edges_of(driver, tenant, repo)[:3]
    assert len(edges) == 3
    bad = [
        {**edges[0], "evidence_refs": [], "evidence_ref": str(edges[0]["evidence_ref"]).replace(
            "#L", "-gone#L")},
        {**edges[1], "evidence_refs": [], "evidence_ref": REF.sub(
            lambda m: f"{m['path']}#L9999@{m['commit']}", str(edges[1]["evidence_ref"]))},
        {**edges[2], "evidence_refs": [], "src": "service:zzqq", "dst": "service:qqzz",
         "src_name": "zzqq", "dst_name": "qqzz", "props": {}},
        {**edges[0], "evidence_refs": [], "evidence_ref": "no reference at all"},
    ]
    report = audit_edges(repo, source_of(repo), bad)
    assert (report.refs, report.resolved) == (4, 0)
    assert report.reasons == {"no such path at that commit": 1, "line out of range": 1,
                              "line does not state the fact": 1,
                              "not path#L<line>@<commit>": 1}
    assert [f.ref for f in report.failures] == [str(e["evidence_ref"]) for e in bad]


def test_audit_command_input_errors(
    replays: dict[str, tuple[str, Path]], tmp_path: Path,
) -> None:
    tenant, repo = replays[BOA[0]]
    other = tmp_path / "retail-store-sample-app"
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    for args, words in (
        (["--tenant", tenant], "--repo"),
        (["--tenant", tenant, "--repo", str(tmp_path / "nothing")], "not a git checkout"),
        (["--tenant", tenant, "--repo", str(other)], "no edges from git:retail"),
    ):
        done = cli("audit", "evidence", *args)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0]


def test_a_second_replay_of_the_same_source_is_refused(
    stack: Settings, driver: Driver, replays: dict[str, tuple[str, Path]],
) -> None:
    tenant, repo = replays[BOA[0]]
    source = source_of(repo)
    with replay_lock(stack.postgres_dsn, tenant, source):
        with pytest.raises(Conflict, match="another replay of git:bank-of-anthos"):
            ingest_git(GraphWriter(stack, driver, embedder=None), repo, history=True,
                       until=BOA[2], tenant=tenant, progress=lambda _m: None)
        done = cli("ingest", "git", str(repo), "--history", SUBSTRATE_TENANT=tenant)
        assert done.returncode == 4, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "another replay of git:bank-of-anthos" in lines[0]
        assert f"tenant {tenant}" in lines[0]
        # another source of the same tenant, or the same source elsewhere, is not blocked
        with replay_lock(stack.postgres_dsn, tenant, "git:other"), \
                replay_lock(stack.postgres_dsn, new_tenant("other"), source):
            pass
    with replay_lock(stack.postgres_dsn, tenant, source):  # released: free again
        pass


def _times(pg: psycopg.Connection[Any], tenant: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for source, valid_at in pg.execute(
            "SELECT source, valid_at FROM snapshots WHERE tenant_id = %s ORDER BY version",
            (tenant,)).fetchall():
        out.setdefault(str(source), []).append(valid_at)
    return out


def test_snapshot_times_are_monotonic_per_source(
    stack: Settings, driver: Driver, pg: psycopg.Connection[Any],
    replays: dict[str, tuple[str, Path]],
) -> None:
    for tenant, repo in replays.values():
        times = _times(pg, tenant)[source_of(repo)]
        assert len(times) >= 2 and times == sorted(times)
    # the newest commit first, then the older history: older commits do not go back in time
    _, repo = replays[MOVE[0]]
    tenant = new_tenant("monotonic")
    writer = GraphWriter(stack, driver, embedder=None)
    try:
        ingest_git(writer, repo, until=MOVE[2], tenant=tenant, progress=lambda _m: None)
        ingest_git(writer, repo, history=True, since=MOVE[1], until=MOVE[2], tenant=tenant,
                   progress=lambda _m: None)
        times = _times(pg, tenant)[source_of(repo)]
        assert len(times) >= 2 and times == sorted(times)
    finally:
        drop_tenant_graph(driver, tenant)


def test_a_renamed_entity_keeps_one_identity(
    stack: Settings, driver: Driver, replays: dict[str, tuple[str, Path]],
) -> None:
    tenant, repo = replays[BOA[0]]
    rows, _, _ = driver.execute_query(
        "MATCH (o:Entity {tenant_id: $t})-[r:ALIAS_OF]->(n:Entity {tenant_id: $t}) "
        "RETURN o.ceid AS old, n.ceid AS new, r.evidence_ref AS ref, r.renamed AS renamed, "
        "r.from_path AS from_path, r.to_path AS to_path, r.valid_to_v IS NULL AS live, "
        "n.aliases AS aliases, o.valid_from_ts AS born, o.valid_to_ts AS renamed_at, "
        "r.valid_from_ts AS alias_at", t=tenant)
    found = {(r["old"], r["new"]): r.data() for r in rows}
    assert set(found) == {("infra:mongodb-users", "infra:accounts-db"),
                          ("infra:redis-ledger", "infra:ledger-db")}
    alias = found[("infra:mongodb-users", "infra:accounts-db")]
    assert alias["renamed"] and alias["live"] and alias["aliases"] == ["mongodb-users"]
    assert (alias["from_path"], alias["to_path"]) == (
        "kubernetes-manifests/mongodb-users.yaml", "kubernetes-manifests/accounts-db.yaml")
    # the evidence is the line of the renamed file, at the renaming commit, naming the new name
    m = REF.match(alias["ref"])
    assert m is not None and m["path"] == "kubernetes-manifests/accounts-db.yaml"
    line = run_git(repo, "show", f"{m['commit']}:{m['path']}").decode().splitlines()[
        int(m["line"]) - 1]
    assert "accounts-db" in line
    assert alias["renamed_at"] == alias["alias_at"]  # closed by the rename, at its commit
    assert str(alias["born"]) < str(alias["renamed_at"])  # its history before stays
    # look-ups by the old name reach the entity under its new name
    with gateway(stack, headers={"X-Tenant": tenant}) as client:
        body = client.get("/memory/infra:mongodb-users").json()
    assert body["entity"]["ceid"] == "infra:accounts-db", body
    # what depended on it before the rename depends on the renamed entity after it
    deps, _, _ = driver.execute_query(
        "MATCH (a {tenant_id: $t})-[r:DEPENDS_ON]->(b {tenant_id: $t, ceid: $c}) "
        "WHERE r.valid_to_v IS NULL RETURN collect(DISTINCT a.ceid) AS callers",
        t=tenant, c="infra:accounts-db")
    # userservice is a service: its pod's first container is userservice; the init container
    # that waits for the database (image mongo:4) made it a datastore before
    assert "service:userservice" in deps[0]["callers"]
