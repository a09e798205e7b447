"""Intent mismatch (RSN-09, RSN-UC-03) and epic impact (RSN-UC-08) on the demo tenant "acme"
(read-only), against the hand-checked facts of substrate/demo/EXPECTED.md."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from substrate.demo.load import ORG_JSONL
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.impact import epic_impact, resolve_item
from substrate.retrieval.intent import ADVISORY
from substrate.retrieval.scope import resolve_scope
from substrate.services import open_services
from substrate.settings import Settings
from tests.support.gateway_client import gateway
from tests.support.recording_reader import Recorder

pytestmark = pytest.mark.integration

SHOP_10 = {"service:checkout", "service:payment", "service:cart", "service:pricing"}
SPEC_ADVISORY = ("The code changes in this PR appear semantically distant from the linked "
                 "project item. Confirm that this PR addresses the correct work item.")


@pytest.fixture(scope="module")
def api(stack: Settings) -> Iterator[httpx.Client]:
    with gateway(stack) as c:
        yield c


def org(path: Path = ORG_JSONL) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check(api: httpx.Client, pr: Any, status: int = 200, **extra: Any) -> dict[str, Any]:
    r = api.post("/intent-check", json={"pr": pr, **extra})
    assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()
    return body


def test_pr_447_is_flagged_with_the_advisory_and_both_texts(api: httpx.Client) -> None:
    body = check(api, 447)
    records = {r["ceid"]: r for r in org() if r["kind"] == "node"}
    assert body["flagged"] is True and body["status"] == "flagged"
    assert body["score"] < 0.6 and body["threshold"] == 0.6
    assert body["advisory"] == SPEC_ADVISORY == ADVISORY
    assert body["linked_item"]["ceid"] == "item:shop-22"
    assert body["compared"] == {"pr_text": records["pr:447"]["props"]["summary"],
                                "item_text": records["item:shop-22"]["props"]["description"]}
    assert [i["item"]["ceid"] for i in body["items"]] == ["item:shop-22"]
    assert body["evidence_bundle"]["hops"][0]["evidence_ref"] == "github:acme/shop#pr-447"


def test_every_other_linked_pr_matches_its_item(api: httpx.Client) -> None:
    linked = sorted({int(r["src"].split(":")[1]) for r in org()
                     if r["kind"] == "edge" and r["type"] == "LINKS_TO"
                     and r["src"].startswith("pr:")})
    assert len(linked) == 17 and 447 in linked
    for number in linked:
        body = check(api, f"pr:{number}")
        assert body["flagged"] is (number == 447), (number, body["score"])
        if number != 447:
            assert body["score"] >= 0.6 and body["advisory"] is None
            assert body["status"] == "ok"


@pytest.mark.parametrize("pr", [447, "447", "pr:447", "#447", "PR #447"])
def test_pr_ids_in_every_accepted_form(api: httpx.Client, pr: Any) -> None:
    assert check(api, pr)["pr"]["ceid"] == "pr:447"


def test_pr_without_a_linked_item_gets_an_answer_not_a_score(api: httpx.Client) -> None:
    body = check(api, 427)  # "Move checkout to the payments team": no LINKS_TO in org.jsonl
    assert body["status"] == "no_linked_item"
    assert body["linked_item"] is None and body["items"] == [] and "score" not in body
    assert body["flagged"] is False and body["advisory"] is None
    assert "links no project item" in body["message"]


@pytest.mark.parametrize(("pr", "status"), [(99999, 404), ("pr:99999", 404), ("abc", 400),
                                            (True, 400), (None, 400), ("", 400)])
def test_unknown_or_malformed_pr(api: httpx.Client, pr: Any, status: int) -> None:
    body = check(api, pr, status)
    assert body["error"]["code"] == {404: "not_found", 400: "bad_request"}[status]


def test_intent_check_rejects_unknown_fields_and_honours_at(api: httpx.Client) -> None:
    assert api.post("/intent-check", json={"pr": 447, "prr": 1}).status_code == 400
    assert api.post("/intent-check", json={}).status_code == 400
    before_org = check(api, 447, 404, at="2026-10-01T00:00:00Z")  # org facts came 10-30
    assert "at snapshot" in before_org["error"]["message"]
    pinned = check(api, 447, at="2026-11-01T00:00:00Z")
    assert pinned["pinned"] is True and pinned["flagged"] is True


def test_search_explains_the_mismatch(api: httpx.Client) -> None:
    r = api.post("/search", json={"query": "Does PR #447 match its linked ticket?"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["route"]["intent"] == "intent_mismatch"
    assert "SHOP-22" in body["answer"] and SPEC_ADVISORY in body["answer"]


def impact(api: httpx.Client, item: str, **params: Any) -> dict[str, Any]:
    r = api.get(f"/impact/{item}", params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_epic_shop_10_affects_exactly_its_asserted_services(api: httpx.Client) -> None:
    body = impact(api, "SHOP-10", depth=0)
    assert body["item"]["ceid"] == "item:shop-10"
    assert set(body["asserted"]) == SHOP_10 and body["dependents"] == []
    assert body["intents"] == ["intent:checkout-under-800ms-p95"]
    for s in body["services"]:
        assert s["path"] == ["item:shop-10", "intent:checkout-under-800ms-p95", s["ceid"]]
        assert [h["type"] for h in s["hops"]] == ["LINKS_TO", "ASSERTS"]
        assert all(h["evidence_ref"] == "jira:SHOP-10#intent" for h in s["hops"])
    assert impact(api, "item:shop-10", depth=0)["asserted"] == body["asserted"]


def callers(api: httpx.Client, service: str) -> set[str]:
    r = api.get(f"/dependencies/{service}", params={"direction": "in", "depth": 1})
    assert r.status_code == 200, r.text
    return {d["target"]["ceid"] for d in r.json()["dependencies"]}


def test_epic_dependents_within_one_hop_are_the_callers(api: httpx.Client) -> None:
    body = impact(api, "SHOP-10")
    assert body["depth"] == 1 and set(body["asserted"]) == SHOP_10
    expected = set().union(*(callers(api, s) for s in SHOP_10)) - SHOP_10
    assert set(body["dependents"]) == expected
    assert "service:returns" in expected  # returns calls payment (EXPECTED.md)
    for s in body["services"]:
        if s["role"] == "dependent":
            assert s["depth"] == 1 and s["via"] in SHOP_10
            assert s["path"][-2:] == [s["via"], s["ceid"]]
            last = s["hops"][-1]
            assert (last["from"], last["to"]) == (s["ceid"], s["via"])
            assert last["type"] in ("CALLS", "DEPENDS_ON") and last["evidence_ref"]
    two = impact(api, "SHOP-10", depth=2)
    assert set(two["dependents"]) >= set(body["dependents"])
    assert all(s["depth"] <= 2 for s in two["services"])


@pytest.mark.parametrize(("item", "expected"), [
    ("SHOP-20", {"service:tax", "service:invoicing", "service:pricing"}),
    ("SHOP-30", {"service:promotions", "service:pricing"}),
    ("SHOP-40", {"service:wishlist", "service:notification", "service:email",
                 "service:loyalty"}),
    ("SHOP-50", {"service:auth", "service:ledger", "service:notification"}),
])
def test_other_epics(api: httpx.Client, item: str, expected: set[str]) -> None:
    assert set(impact(api, item, depth=0)["asserted"]) == expected


def test_epic_errors_and_time(api: httpx.Client) -> None:
    assert api.get("/impact/SHOP-99").status_code == 404
    assert api.get("/impact/SHOP-10", params={"depth": 3}).status_code == 400
    assert api.get("/impact/service:checkout").status_code == 400  # not an item id
    early = api.get("/impact/SHOP-10", params={"at": "2026-10-01T00:00:00Z"})
    assert early.status_code == 404  # the org facts were loaded as of 2026-10-30
    assert api.get("/impact/SHOP-10", params={"at": "garbage"}).status_code == 400


def epic_search(api: httpx.Client, question: str) -> dict[str, Any]:
    """The /search answer to ``question``, which must be routed to the epic family."""
    r = api.post("/search", json={"query": question})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert body["route"]["intent"] == "epic_impact"
    return body


def test_search_names_the_epics_services(api: httpx.Client) -> None:
    answer = epic_search(api, "Which services does epic SHOP-10 affect?")["answer"]
    assert answer.startswith("Faster, safer checkout (item:shop-10) affects cart, checkout, "
                             "payment, pricing")


@pytest.mark.parametrize("item", ["SHOP-10", "item:shop-10", "SHOP-40"])
@pytest.mark.parametrize("depth", [0, 1, 2])
def test_impact_is_one_read_with_the_two_step_answer(stack: Settings, item: str,
                                                    depth: int) -> None:
    """/impact resolves the item and walks its impact in one query (issue 12.1); the services,
    paths and hops are those of resolving first and then running ``retrieval/epic_impact``."""
    async def go() -> tuple[dict[str, Any], list[str], dict[str, Any], list[dict[str, Any]]]:
        services = open_services(stack, check_templates=False)
        try:
            reader = Recorder(GraphReader(services.async_driver, services.cypher))
            scope = await resolve_scope(stack, stack.tenant)
            out = await epic_impact(reader, scope, item, depth, limit=100)
            resolved = await resolve_item(reader, scope, item)
            rows = await reader.rows("retrieval/epic_impact", scope, {"depth": depth},
                                     ceid=resolved["ceid"], limit=101)
            return out, reader.ran[:1], resolved, rows
        finally:
            await services.aclose()

    out, first, resolved, rows = asyncio.run(go())
    assert first == ["retrieval/direct_impact"]  # the answer came from that one query
    assert out["item"] == resolved
    assert [(s["ceid"], s["depth"], s["via"], s["intent"]) for s in out["services"]] == [
        (r["service"]["ceid"], r["depth"], r["via"], r["intent"]) for r in rows]
    assert [[(h["from"], h["to"], h["type"], h["evidence_ref"]) for h in s["hops"]]
            for s in out["services"]] == [
        [(h["from"], h["to"], h["type"], h["evidence_ref"]) for h in r["hops"]] for r in rows]
    assert out["services"] and out["truncated"] is False


# the five epics of substrate/demo/org.jsonl and the services their intent assertions name
# (their own and their issues', PART_OF): SHOP-10 and SHOP-40 four each, SHOP-20 and SHOP-50
# three, SHOP-30 two
EPICS = {"SHOP-10": SHOP_10,
         "SHOP-20": {"service:tax", "service:invoicing", "service:pricing"},
         "SHOP-30": {"service:promotions", "service:pricing"},
         "SHOP-40": {"service:wishlist", "service:notification", "service:email",
                     "service:loyalty"},
         "SHOP-50": {"service:auth", "service:ledger", "service:notification"}}


def test_search_ranks_the_epics_by_the_services_they_affect(api: httpx.Client) -> None:
    body = epic_search(api, "Which epic affects the most services?")
    answer = body["answer"]
    assert answer.startswith('SHOP-10 "Faster, safer checkout" and SHOP-40 "Customer '
                             'engagement" affect the most services (4 each): ')
    # every epic, the most first, each with its services named and its asserting line cited
    order = [answer.index(f"{k} ") for k in ("SHOP-10", "SHOP-40", "SHOP-20", "SHOP-50",
                                              "SHOP-30")]
    assert order == sorted(order)
    for services in EPICS.values():  # in id order: cart, checkout, payment, pricing
        assert ", ".join(sorted(s.split(":", 1)[1] for s in services)) in answer
    assert "[jira:SHOP-10#intent]" in answer
    assert body["confidence"]["confidence"] > 0.5  # walked from the graph, not a guess


def test_search_names_the_epic_affecting_the_fewest_and_a_top_n(api: httpx.Client) -> None:
    fewest = epic_search(api, "Which epic affects the fewest services?")
    assert fewest["answer"].startswith(
        'SHOP-30 "Promotions platform" affects the fewest services (2): ')
    top = epic_search(api, "Top 2 epics by services affected")
    assert top["answer"].startswith('SHOP-10 "Faster, safer checkout" and SHOP-40 ')
    assert "SHOP-20" not in top["answer"] and "Then:" not in top["answer"]
