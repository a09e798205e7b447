"""Who owned a path at a past date (issue 8), on short windows of two devset histories replayed
into tenants of their own and asked through ``POST /search``. Expected owners and lines were
read from the bundles (``git log -p -- .github/CODEOWNERS``), never from the product:

* manage.get.gov, 2023-05-20..2023-05-27: before the merge of #624 (a775d7e, 2023-05-24) the
  only rule was ``docs/* @dotgov`` (line 3), which does not cover ``src/registrar`` (nor the
  compose service ``app`` building ``src/``, what the question resolves to while no line
  proves the package folder); after it,
  ``* @abroddrick`` (line 4) owns it and ``docs/* @cisagov/dotgov`` the docs;
* fac, 2025-02-12..2025-02-21: ``/backend/manifests/ @GSA-TTS/FAC-admins`` arrived with
  e4ede82 (2025-02-19, line 8); before it no rule named or covered the folder, so nobody is
  recorded, and the answer cites the rules then in effect (``/terraform/meta/``, line 7).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from substrate.connectors.git_ingest import ingest_git
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from tests.support import devset
from tests.support.gateway_client import gateway
from tests.support.graphstate import drop_tenant_graph, new_tenant

pytestmark = pytest.mark.integration

WINDOWS = {"manage.get.gov": ("2023-05-20", "2023-05-27"), "fac": ("2025-02-12", "2025-02-21")}
_REF = re.compile(r"^(?P<path>[^#]+)#L(?P<line>\d+)@(?P<commit>[0-9a-f]{7,40})$")


@pytest.fixture(scope="module")
def replays(stack: Settings, driver: Driver, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[dict[str, tuple[Path, str]]]:
    root = tmp_path_factory.mktemp("devset")
    out: dict[str, tuple[Path, str]] = {}
    for name, (since, until) in WINDOWS.items():
        repo, tenant = devset.clone(name, root), new_tenant(f"own-{name.split('.')[0][:8]}")
        ingest_git(GraphWriter(stack, driver, embedder=None), repo, history=True, since=since,
                   until=until, tenant=tenant, progress=lambda _m: None)
        out[name] = (repo, tenant)
    yield out
    for _, tenant in out.values():
        drop_tenant_graph(driver, tenant)


def line_of(repo: Path, ref: str) -> str:
    match = _REF.match(ref)
    assert match, ref
    text = subprocess.run(["git", "show", f"{match['commit']}:{match['path']}"], cwd=repo,
                          capture_output=True, text=True, check=True).stdout
    return text.splitlines()[int(match["line"]) - 1]


def ask(stack: Settings, tenant: str, question: str) -> dict[str, Any]:
    with gateway(stack, headers={"X-Tenant": tenant}, timeout=60) as api:
        r = api.post("/search", json={"query": question})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert body["route"]["intent"] == "ownership", body["route"]
    return body


def cited_lines(repo: Path, body: dict[str, Any]) -> list[str]:
    return [line_of(repo, c["evidence_ref"]) for c in body["citations"]]


def test_registrar_before_and_after_the_catch_all(
    stack: Settings, replays: dict[str, tuple[Path, str]]
) -> None:
    repo, tenant = replays["manage.get.gov"]
    before = ask(stack, tenant, "Who owned the registrar app on 2023-05-23?")
    assert before["answer"].startswith("No owner is recorded for "), before["answer"]
    assert "abroddrick" not in before["answer"] and "dotgov" not in before["answer"]
    assert "docs/* @dotgov" in cited_lines(repo, before)  # the rule that was checked
    after = ask(stack, tenant, "Who owned the registrar app on 2023-05-26?")
    assert "@abroddrick" in after["answer"] and "dotgov" not in after["answer"]
    assert "* @abroddrick" in cited_lines(repo, after)
    docs = ask(stack, tenant, "Who owned the documentation on 2023-05-23?")
    assert "@dotgov" in docs["answer"] and "cisagov" not in docs["answer"], docs["answer"]


def test_a_path_whose_rule_came_later(
    stack: Settings, replays: dict[str, tuple[Path, str]]
) -> None:
    repo, tenant = replays["fac"]
    before = ask(stack, tenant, "Who owned the Cloud Foundry manifests on 2025-02-15?")
    assert before["answer"].startswith("No owner is recorded for /backend/manifests/"), \
        before["answer"]
    assert "FAC-admins" not in before["answer"]
    assert "/terraform/meta/ @GSA-TTS/FAC-admins" in cited_lines(repo, before)
    after = ask(stack, tenant, "Who owned the Cloud Foundry manifests on 2025-02-20?")
    assert "@GSA-TTS/FAC-admins" in after["answer"], after["answer"]
    assert "/backend/manifests/ @GSA-TTS/FAC-admins" in cited_lines(repo, after)
