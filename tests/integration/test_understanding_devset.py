"""Issue 8 understanding and model-free answers on real repositories from ../shared/devset:
bank-of-anthos replayed from 2019-11-01 to 2020-01-31 and FAC's ADRs at HEAD.

Gold is read from the repositories with git (``git log -S``, ``git show``), not from the product:
* frontend gained ``BALANCES_API_ADDR: balancereader:8080`` (kubernetes-manifests/frontend.yaml)
  in the commit whose subject is "frontend talks to balance service", and
  ``CONTACTS_API_ADDR`` in "hooked up contacts with frontend";
* docs/architecture/decisions/0021-switch-to-unified-django-web-app.md states the decision
  ("We will move the current frontend into Django, ...") under "## Decision", status Accepted,
  Date 2022-10-28.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from substrate.db import neo4j_driver
from substrate.settings import PROJECT_ROOT, Settings
from tests.support import devset
from tests.support.gateway_client import gateway

pytestmark = pytest.mark.integration

CLI = PROJECT_ROOT / ".substrate" / "venv" / "bin" / "substrate"
ADR = "docs/architecture/decisions/0021-switch-to-unified-django-web-app.md"


def clone(tmp: pytest.TempPathFactory, name: str) -> Path:
    return devset.clone(name, tmp.mktemp("devset"))


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "TZ": "UTC"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True, env=env).stdout


def ingest(repo: Path, tenant: str, *args: str) -> None:
    env = {**os.environ, "SUBSTRATE_TENANT": tenant}
    done = subprocess.run([str(CLI), "ingest", "git", str(repo), *args], env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture(scope="module")
def boa(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return clone(tmp_path_factory, "bank-of-anthos")


@pytest.fixture(scope="module")
def fac(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return clone(tmp_path_factory, "fac")


def _tenant(stack: Settings, prefix: str) -> str:
    return f"t-{prefix}-{uuid.uuid4().hex[:8]}"


def _drop(stack: Settings, tenant: str) -> None:
    driver = neo4j_driver(stack)
    driver.execute_query("MATCH (n {tenant_id: $t}) DETACH DELETE n", t=tenant)
    driver.close()


@pytest.fixture(scope="module")
def boa_api(stack: Settings, boa: Path) -> Iterator[httpx.Client]:
    tenant = _tenant(stack, "boa")
    ingest(boa, tenant, "--history", "--since", "2019-11-01", "--until", "2020-01-31")
    with gateway(stack, headers={"X-Tenant": tenant}) as c:
        yield c
    _drop(stack, tenant)


@pytest.fixture(scope="module")
def fac_api(stack: Settings, fac: Path) -> Iterator[httpx.Client]:
    tenant = _tenant(stack, "fac")
    ingest(fac, tenant)
    with gateway(stack, headers={"X-Tenant": tenant}) as c:
        yield c
    _drop(stack, tenant)


def ask(api: httpx.Client, query: str) -> dict[str, Any]:
    r = api.post("/search", json={"query": query})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def introducing(repo: Path, needle: str, path: str) -> tuple[str, str, str]:
    """(short sha, UTC commit date, subject) of the first commit adding ``needle`` to ``path``."""
    line = git(repo, "log", "--reverse", "--format=%h|%cd|%s", "--date=format-local:%Y-%m-%d",
               "-S", needle, "--", path).splitlines()[0]
    sha, day, subject = line.split("|", 2)
    return sha, day, subject


def test_when_did_frontend_start_calling_balancereader(boa_api: httpx.Client, boa: Path) -> None:
    sha, day, subject = introducing(boa, "BALANCES_API_ADDR", "kubernetes-manifests/frontend.yaml")
    body = ask(boa_api, "When did frontend start calling balancereader?")
    assert body["route"]["intent"] == "when"
    assert f"started depending on balancereader on {day}" in body["answer"]
    assert sha[:7] in body["answer"] and subject in body["answer"]
    ref = body["citations"][0]["evidence_ref"]
    path, rest = ref.split("#L")
    line, commit = rest.split("@")
    cited = git(boa, "show", f"{commit}:{path}").splitlines()[int(line) - 1]
    # the edge's evidence is the line stating the address (`value: "balancereader:8080"`
    # under `- name: BALANCES_API_ADDR`), or the variable's own line in older manifests
    assert "balancereader:8080" in cited or "BALANCES_API_ADDR" in cited
    assert 0.5 < body["confidence"]["confidence"] < 1.0


def test_reverse_direction_lowercase_name_and_a_qualifier(boa_api: httpx.Client) -> None:
    body = ask(boa_api, "In Bank of Anthos, which services depend on balancereader?")
    assert body["route"]["intent"] == "callers"
    assert body["entities"][0]["name"] == "balancereader"
    assert body["answer"].startswith("balancereader is called directly by:")
    assert "frontend" in body["answer"]
    forward = ask(boa_api, "What does frontend depend on?")
    assert forward["answer"].startswith("frontend depends on:")
    assert "balancereader" in forward["answer"] and "contacts" in forward["answer"]


def test_time_phrase_pins_a_dependency_question(boa_api: httpx.Client, boa: Path) -> None:
    _, day, _ = introducing(boa, "CONTACTS_API_ADDR", "kubernetes-manifests/frontend.yaml")
    assert day > "2019-12-07"
    before = ask(boa_api, "What did frontend depend on on 2019-12-07?")
    assert before["pinned"] and "balancereader" in before["answer"]
    assert "contacts" not in before["answer"]
    now = ask(boa_api, "What does frontend depend on?")
    assert "contacts" in now["answer"]


def test_what_changed_in_a_month_lists_commits(boa_api: httpx.Client, boa: Path) -> None:
    sha, _, _ = introducing(boa, "CONTACTS_API_ADDR", "kubernetes-manifests/frontend.yaml")
    body = ask(boa_api, "What changed in December 2019?")
    assert body["route"]["intent"] == "temporal"
    assert body["route"]["time"]["start"].startswith("2019-12-01")
    assert "frontend -CALLS-> service:contacts" in body["answer"] or "contacts" in body["answer"]
    assert sha[:7] in body["answer"]
    empty = ask(boa_api, "What changed between 2019-11-02 and 2019-11-03?")
    assert empty["answer"].startswith("Nothing changed between 2019-11-02 and 2019-11-04")


def test_no_owner_recorded_is_said_plainly(boa_api: httpx.Client) -> None:
    body = ask(boa_api, "Who owns userservice?")
    assert " is owned by ." not in body["answer"]
    assert body["answer"].startswith(("No owner is recorded for userservice",
                                      "userservice is owned by "))


def test_why_quotes_the_adr_decision_with_lines(fac_api: httpx.Client, fac: Path) -> None:
    body = ask(fac_api, "Why did FAC switch to a unified Django web application?")
    assert body["route"]["intent"] == "decision_rationale"
    answer = body["answer"]
    assert answer.startswith('adr:0021 "Switch to a unified Django web application architecture"')
    assert "status accepted" in answer and "2022-10-28" in answer
    assert "We will move the current frontend into Django" in answer
    lines = git(fac, "show", f"HEAD:{ADR}").splitlines()
    for cite in body["citations"]:  # path#L12@c, or #L12-L14@c: a wrapped sentence, a list
        path, rest = cite["evidence_ref"].split("#L")
        span, commit = rest.split("@")
        first, _, last = span.partition("-L")
        assert path == ADR
        text = git(fac, "show", f"{commit}:{path}").splitlines()
        cited = text[int(first) - 1:int(last or first)]
        assert cited[0].strip() and cited[-1].strip()  # a list's lead-in to its last item
        assert all(line in lines for line in cited if line.strip())
    assert 0.3 < body["confidence"]["confidence"] < 1.0
