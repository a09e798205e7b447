"""Evidence audit on a slice of manage.get.gov's history (issue 9): refs to a module folder.

cisagov/manage.get.gov, 2022-08-15 .. 2022-09-15: ``src/registrar`` is a Python package
whose only direct file is an empty ``__init__.py`` (its code lives in sub-folders). Its
``Module`` node is ``PART_OF`` the repository, proven by a line of a file; an empty file has no
line 1, so the proof is never the empty ``__init__.py`` but a non-empty line (of a file below
the folder, which states the membership by where it lives). The whole-history
figure is in ``tests/bench/bench_evidence_audit.py``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

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
REPO = "manage.get.gov"
WINDOW = ("2022-08-15", "2022-09-15")


@pytest.fixture(scope="module")
def replay(stack: Settings, driver: Driver, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[str, Path]]:
    repo = devset.clone(REPO, tmp_path_factory.mktemp("devset"))
    tenant = new_tenant("mgg-slice")
    ingest_git(GraphWriter(stack, driver, embedder=None), repo, history=True,
               since=WINDOW[0], until=WINDOW[1], tenant=tenant, progress=lambda _m: None)
    yield tenant, repo
    drop_tenant_graph(driver, tenant)


def test_every_ref_of_the_slice_resolves(replay: tuple[str, Path]) -> None:
    tenant, repo = replay
    done = subprocess.run([str(CLI), "audit", "evidence", "--tenant", tenant, "--repo",
                           str(repo)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    (source,) = report["sources"]
    assert report["share"] == 1.0 and source["failure_reasons"] == {}
    assert source["refs"] > 0


def test_a_package_with_an_empty_init_cites_a_line_below_it(
    driver: Driver, replay: tuple[str, Path],
) -> None:
    tenant, repo = replay
    rows, _, _ = driver.execute_query(
        "MATCH (m:Module {tenant_id: $t, ceid: 'module:src-registrar'})-[r:PART_OF]->() "
        "RETURN r.evidence_ref AS ref", t=tenant)
    for ref in {r["ref"] for r in rows}:  # never the empty __init__.py
        m = REF.match(ref)
        assert m is not None and m["path"] != "src/registrar/__init__.py", ref
        text = run_git(repo, "show", f"{m['commit']}:{m['path']}").decode()
        assert text.splitlines()[int(m["line"]) - 1].strip(), ref
