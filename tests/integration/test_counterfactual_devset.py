"""Counterfactuals, timelines and Allen relations on a real repository with history:
retail-store-sample-app from ../shared/devset, replayed from 2026-04-20 to 2026-05-05.

Gold facts, read from the repository (git show / git log), not from the product:
* ``src/app/compose.override.yaml`` line 4 (since 95d133b, "feat: Application v1 (#742)")
  gives ui ``RETAIL_UI_ENDPOINTS_CATALOG=http://catalog:8080`` and line 9 lists catalog under
  ui's ``depends_on``; no other compose file of the
  application points at ``catalog:8080``, so ui is catalog's only direct caller;
* ``src/app/docker-compose.tracing.yml`` appears in 44e7628 (2026-04-28 21:11 -0600, "Add
  tests to ensure OpenTelemetry traces are working (#1026)") and points the services at the
  OpenTelemetry collector: before it checkout did not call otel-collector.
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
BEFORE_TRACING = "2026-04-28T00:00:00Z"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return devset.clone("retail-store-sample-app", tmp_path_factory.mktemp("devset"))


@pytest.fixture(scope="module")
def tenant(stack: Settings, repo: Path) -> Iterator[str]:
    tenant = f"t-rss-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "SUBSTRATE_TENANT": tenant}
    result = subprocess.run([str(CLI), "ingest", "git", str(repo), "--history", "--since",
                             "2026-04-20", "--until", "2026-05-05"], env=env,
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    yield tenant
    driver = neo4j_driver(stack)
    driver.execute_query("MATCH (n {tenant_id: $t}) DETACH DELETE n", t=tenant)
    driver.close()


@pytest.fixture(scope="module")
def api(stack: Settings, tenant: str) -> Iterator[httpx.Client]:
    with gateway(stack, headers={"X-Tenant": tenant}) as c:
        yield c


def search(api: httpx.Client, query: str, counterfactual: Any = True) -> dict[str, Any]:
    r = api.post("/search", json={"query": query, "options": {"counterfactual": counterfactual}})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_single_caller_flips_on_the_one_line_that_proves_it(api: httpx.Client,
                                                           repo: Path) -> None:
    cf = search(api, "Who calls catalog directly?")["counterfactual"]
    assert cf["answer_entities"] == ["service:ui"]
    flip = cf["minimum_flipping_change"]
    assert flip["size"] == 1
    path, rest = flip["evidence_refs"][0].split("#L")
    line, commit = rest.split("@")
    shown = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"],
                           capture_output=True, text=True, check=True).stdout.splitlines()
    # ui's block of the override names catalog twice: the endpoint variable (line 4) and
    # depends_on (line 9); either line proves the call
    assert path == "src/app/compose.override.yaml" and int(line) in (4, 9)
    assert "catalog" in shown[int(line) - 1]


def test_shift_before_the_tracing_overlay_drops_the_collector(api: httpx.Client) -> None:
    body = search(api, "What does checkout depend on?",
                  {"shift_to": {"at": BEFORE_TRACING}})
    assert "service:otel-collector" in body["counterfactual"]["answer_entities"]
    shift = body["counterfactual"]["temporal_shift"]
    assert shift["lost"] == ["service:otel-collector"] and shift["gained"] == []
    unused = search(api, "What does checkout depend on?",
                    {"remove_edges": ["service:ui-[CALLS]->service:catalog"]})
    assert unused["counterfactual"]["modifications"][0]["changed"] is False


def test_timeline_and_allen_relation_of_the_two_calls(api: httpx.Client) -> None:
    r = api.get("/timeline/checkout")
    assert r.status_code == 200, r.text
    added = [e for e in r.json()["events"] if e["kind"] == "relationship_added"
             and e["relationship"]["to"] == "service:otel-collector"]
    assert added and added[0]["snapshot"]["commit"].startswith("44e7628")
    rel = api.get("/timeline-relate", params={
        "a": "service:ui-[CALLS]->service:catalog",
        "b": "service:checkout-[CALLS]->service:otel-collector"}).json()
    assert rel["holds"] == ["finished_by"]  # began earlier, both still hold
