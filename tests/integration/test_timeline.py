"""GET /timeline/{id} and GET /timeline-relate on the demo organisation.

Gold facts come from the demo's sources (substrate/demo/timeline.py, topology.py,
EXPECTED.md): checkout belongs to the commerce team until the payments team takes it over in
PR #427 (2026-09-08 09:00); PR #429 (2026-09-10 12:00) adds its Redis dependency; PR #431
(bda96bb, 2026-09-15 10:12) sets PAYMENT_TIMEOUT_MS 5000 -> 800 and adds the fraud call, PR
#436 (2501eec, 2026-09-17 15:40) sets it back to 3000; the checkout incident is dated
2026-09-17 14:32; ADR-0012 (PR #441, 2026-09-28 16:00) supersedes ADR-0003.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from substrate.settings import Settings
from tests.support.gateway_client import gateway

pytestmark = pytest.mark.integration

INCIDENT = "incident:2026-09-17-checkout-payment-timeouts"
FRAUD_CALL = "service:checkout-[CALLS]->service:fraud"


@pytest.fixture(scope="module")
def api(stack: Settings) -> Iterator[httpx.Client]:
    with gateway(stack) as c:
        yield c


def get(api: httpx.Client, path: str, **params: Any) -> dict[str, Any]:
    response = api.get(path, params=params, headers={"X-Tenant": "acme"})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def timeout_values(change: list[Any]) -> list[str | None]:
    return [next((e for e in (side or []) if e.startswith("PAYMENT_TIMEOUT_MS=")), None)
            for side in change]


def test_timeline_lists_property_and_relationship_changes_with_commits(
        api: httpx.Client) -> None:
    body = get(api, "/timeline/checkout")
    assert body["entity"]["ceid"] == "service:checkout"
    events = body["events"]
    versions = [e["version"] for e in events]
    assert versions == sorted(versions), "oldest first"
    env_changes = [(e["snapshot"]["commit"][:7], timeout_values(e["changes"]["env"]))
                   for e in events
                   if e["kind"] == "properties_changed" and "env" in e["changes"]]
    timeout_moves = [(c, v) for c, v in env_changes if v[0] != v[1]]
    assert timeout_moves == [
        ("bda96bb", ["PAYMENT_TIMEOUT_MS=5000", "PAYMENT_TIMEOUT_MS=800"]),
        ("2501eec", ["PAYMENT_TIMEOUT_MS=800", "PAYMENT_TIMEOUT_MS=3000"]),
    ]
    redis = [e for e in events if e["kind"] == "relationship_added"
             and e["relationship"]["to"] == "infra:redis"]
    assert redis and redis[0]["snapshot"]["at"].startswith("2026-09-10T12:00")
    assert "(#429)" in redis[0]["snapshot"]["message"]
    assert "@" in redis[0]["relationship"]["evidence_ref"]


def test_ownership_handover_is_one_closed_and_one_added_claim(api: httpx.Client) -> None:
    events = get(api, "/timeline/checkout")["events"]
    handover = [e for e in events if "(#427)" in (e["snapshot"].get("message") or "")
                and e["kind"].startswith("relationship_")
                and e["relationship"]["type"] in ("OWNS", "PRIMARY_OWNER")]
    closed = {e["relationship"]["from"] for e in handover if e["kind"] == "relationship_closed"}
    added = {e["relationship"]["from"] for e in handover if e["kind"] == "relationship_added"}
    assert any("commerce" in c for c in closed), handover
    assert any("payments" in a for a in added), handover


def test_pinned_timeline_stops_at_the_pin(api: httpx.Client) -> None:
    full = get(api, "/timeline/checkout")
    early = get(api, "/timeline/checkout", at="2026-09-12T00:00:00Z")
    assert early["snapshot_version"] < full["snapshot_version"]
    assert all(e["version"] <= early["snapshot_version"] for e in early["events"])
    assert not any(e["snapshot"]["commit"] and e["snapshot"]["commit"].startswith("bda96bb")
                   for e in early["events"])


def test_incident_falls_during_the_payments_ownership_and_after_the_commerce_one(
        api: httpx.Client) -> None:
    owners = {e["relationship"]["from"] for e in get(api, "/timeline/checkout")["events"]
              if e["kind"] == "relationship_added" and e["relationship"]["type"] == "OWNS"}
    payments = next(o for o in owners if "payments" in o)
    commerce = next(o for o in owners if "commerce" in o)
    now = get(api, "/timeline-relate", a=INCIDENT, b=f"{payments}-[OWNS]->service:checkout")
    assert now["holds"] == ["during"]
    before = get(api, "/timeline-relate", a=INCIDENT, b=f"{commerce}-[OWNS]->service:checkout")
    from_codeowners = {p["relation"] for p in before["pairs"]
                       if p["b"]["evidence_ref"].startswith(".github/CODEOWNERS")}
    assert from_codeowners == {"after"}  # the CODEOWNERS claim ended at #427, before it


def test_adrs_in_force_while_checkout_called_fraud(api: httpx.Client) -> None:
    body = get(api, "/timeline-relate", a=FRAUD_CALL, label="DecisionNode")
    in_force = {m["ceid"] for m in body["matches"]}
    assert {"adr:0003", "adr:0012"} <= in_force  # 0003 until superseded, then 0012
    adr3 = next(m for m in body["matches"] if m["ceid"] == "adr:0003")["pairs"][0]
    assert adr3["b"]["to"].startswith("2026-09-28T16:00")  # superseded by ADR-0012 (#441)
    assert adr3["relation"] == "overlapped_by"  # the call began inside ADR-0003's time
    later = get(api, "/timeline-relate", a=FRAUD_CALL, label="DecisionNode", relation="before")
    assert later["matches"] == []  # the call is still there: it precedes no ADR entirely


@pytest.mark.parametrize(("path", "params", "status"), [
    ("/timeline/service:no-such-service", {}, 404),
    ("/timeline-relate", {}, 400),
    ("/timeline-relate", {"a": "service:checkout", "label": "NoSuchLabel"}, 400),
    ("/timeline-relate", {"a": "service:checkout", "b": "service:cart", "relation": "near"}, 400),
    ("/timeline-relate", {"a": "service:checkout-[CALLS]->service:nowhere",
                          "b": "service:cart"}, 404),
])
def test_bad_requests(api: httpx.Client, path: str, params: dict[str, str], status: int) -> None:
    response = api.get(path, params=params)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"]
