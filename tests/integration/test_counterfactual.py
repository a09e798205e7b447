"""Counterfactual analysis on the demo organisation (options.counterfactual and POST
/counterfactual). Gold facts from the demo's sources (substrate/demo/topology.py, timeline.py):
only orders reads INVOICING_URL; checkout gains its Redis dependency in PR #429 (2026-09-10)
and its fraud call in PR #431 (2026-09-15); cart's Redis dependency is not part of an answer
about checkout."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from substrate.settings import Settings
from tests.support.gateway_client import gateway

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def api(stack: Settings) -> Iterator[httpx.Client]:
    with gateway(stack, headers={"X-Tenant": "acme"}) as c:
        yield c


def search(api: httpx.Client, query: str, counterfactual: Any = True) -> dict[str, Any]:
    r = api.post("/search", json={"query": query,
                                  "options": {"counterfactual": counterfactual}})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def line_at(repo: Path, ref: str) -> str:
    path, rest = ref.split("#L", 1)
    line, commit = rest.split("@", 1)
    text = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], check=True,
                          capture_output=True, text=True).stdout
    return text.splitlines()[int(line) - 1]


def test_minimum_flipping_set_is_the_single_edge_that_proves_the_answer(
        api: httpx.Client, stack: Settings) -> None:
    body = search(api, "Find all services calling invoicing directly")
    cf = body["counterfactual"]
    assert cf["answer_entities"] == ["service:orders"]
    flip = cf["minimum_flipping_change"]
    assert flip["size"] == 1 and flip["alternatives"] == 0
    (ref,) = flip["evidence_refs"]
    assert "INVOICING_URL" in line_at(stack.home / "demo" / "acme-shop", ref)
    removal = cf["evidence_removal"][0]
    assert removal["changed"] and removal["lost"] == ["service:orders"]
    assert body["confidence"]["robustness"] == cf["robustness"] == 0.0


def test_relationship_modifications(api: httpx.Client) -> None:
    cf = search(api, "What does checkout depend on?", {"remove_edges": [
        "service:cart-[DEPENDS_ON]->infra:redis",
        "service:checkout-[CALLS]->service:fraud"],
        "redirect": [{"edge": "service:checkout-[CALLS]->service:fraud",
                      "to": "service:ledger"}],
        "remove_nodes": ["service:payment"]})["counterfactual"]
    unused, fraud = cf["modifications"][0], cf["modifications"][1]
    assert unused["changed"] is False and unused["lost"] == unused["gained"] == []
    assert fraud["lost"] == ["service:fraud"] and fraud["gained"] == []
    node = next(m for m in cf["modifications"] if "remove_node" in m)
    assert node["lost"] == ["service:payment"]
    moved = next(m for m in cf["modifications"] if "redirect" in m)
    assert moved["lost"] == ["service:fraud"] and moved["gained"] == ["service:ledger"]
    assert "ledger" in moved["answer"]


def test_temporal_shift_before_a_dependency_existed_drops_it(api: httpx.Client) -> None:
    body = search(api, "What does checkout depend on?",
                  {"shift_to": {"at": "2026-09-09T00:00:00Z"}})
    shift = body["counterfactual"]["temporal_shift"]
    assert shift["snapshot_version"] < body["snapshot_version"]
    assert shift["lost"] == ["infra:redis", "service:fraud"] and shift["gained"] == []


def test_budget_bounds_the_work(api: httpx.Client) -> None:
    cf = search(api, "What does checkout depend on?", {"budget": 2})["counterfactual"]
    assert cf["truncated"] is True and cf["recomputations"] == 2
    assert len(cf["evidence_removal"]) == 2


def test_post_counterfactual_for_a_past_response(api: httpx.Client) -> None:
    past = api.post("/search", json={"query": "Find all services calling invoicing directly"})
    bundle_hash = past.json()["evidence_bundle"]["bundle_hash"]
    r = api.post("/counterfactual", json={"bundle_hash": bundle_hash})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["same_bundle"] is True and out["snapshot_version"] == past.json()[
        "snapshot_version"]
    assert out["counterfactual"]["minimum_flipping_change"]["size"] == 1
    other_tenant = api.post("/counterfactual", json={"bundle_hash": bundle_hash},
                            headers={"X-Tenant": "t-nobody"})
    assert other_tenant.status_code in (404, 403)


@pytest.mark.parametrize(("path", "body"), [
    ("/counterfactual", {"bundle_hash": "zz"}),
    ("/counterfactual", {"bundle_hash": "ab" * 32, "extra": 1}),
    ("/search", {"query": "What does checkout depend on?",
                 "options": {"counterfactual": {"budget": 0}}}),
    ("/search", {"query": "What does checkout depend on?",
                 "options": {"counterfactual": {"remove_edges": ["checkout->fraud"]}}}),
    ("/search", {"query": "What does checkout depend on?",
                 "options": {"counterfactual": {"shift_to": {"snapshot_version": 10 ** 9}}}}),
])
def test_bad_input_is_a_400(api: httpx.Client, path: str, body: dict[str, Any]) -> None:
    r = api.post(path, json=body)
    assert r.status_code == 400, r.text


def test_unknown_bundle_hash_is_a_404(api: httpx.Client) -> None:
    r = api.post("/counterfactual", json={"bundle_hash": "ab" * 32})
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
