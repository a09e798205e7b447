"""Every answer composer, walked with empty and missing inputs: no response renders an empty
list into a sentence ("X is owned by ."), and each says what was checked instead."""

from __future__ import annotations

import re
from typing import Any

import pytest

from substrate.retrieval import composers as c
from substrate.retrieval.answer import compose
from substrate.retrieval.context import Hit, StrategyResult
from substrate.retrieval.router import Intent
from substrate.retrieval.strategies_time import impact_sentence, intent_sentence

SVC = {"ceid": "service:frontend", "name": "frontend", "label": "Service"}
# a blank where a list should be: "by .", "by ;", ": .", "uses ." , "(, )", "on  "
BLANK = re.compile(r"\b(?:by|on|uses|is|of|to|for|from)\s*[.,;)]|:\s*[.,;)]|\(\s*[,;)]|\[\]"
                   r"|\s{2,}|[:,]\s*$")


def clean(text: str) -> None:
    assert text and text.strip(), "empty answer"
    assert not BLANK.search(text), f"blank list rendered: {text!r}"


EMPTY_FACTS: list[tuple[str, dict[str, Any]]] = [
    ("owns_traversal", {"subject": SVC, "owners": [], "note": None}),
    ("dependencies", {"subject": SVC, "target": None, "depth": 0, "hops": []}),
    ("callers", {"subject": SVC, "target": None, "depth": 0, "hops": []}),
    ("edge_history", {"subject": SVC, "object": {**SVC, "name": "contacts"}, "intervals": []}),
    ("attributes", {"subject": SVC, "stated": [], "attributes": []}),
    ("memory", {"subject": SVC, "kind": "DecisionNode", "item": {}, "props": {}, "hop": {},
                "superseded_by": []}),
    ("window_changes", {"window": {"from": "2024-03-01", "to": "2024-04-01"}, "snapshots": 0,
                        "changes": [], "total": 0}),
    ("rationale", {"adr": {"ceid": "adr:0004", "name": "Use DRF"}, "status": None,
                   "date": None, "quotes": [], "scores": []}),
]
FAMILY = {"owns_traversal": Intent.OWNERSHIP, "dependencies": Intent.DEPENDENCY,
          "callers": Intent.CALLERS, "edge_history": Intent.WHEN,
          "attributes": Intent.ATTRIBUTES, "memory": Intent.DECISION_RATIONALE,
          "window_changes": Intent.TEMPORAL, "rationale": Intent.DECISION_RATIONALE}


@pytest.mark.parametrize(("strategy", "fact"), EMPTY_FACTS, ids=[s for s, _ in EMPTY_FACTS])
def test_every_family_with_an_empty_result_says_so(strategy: str, fact: dict[str, Any]) -> None:
    results = {strategy: StrategyResult(strategy, facts=[fact])}
    text, citations = compose(str(FAMILY[strategy]), results, [])
    clean(text)
    assert citations == []


@pytest.mark.parametrize("intent", list(Intent))
def test_no_results_at_all(intent: Intent) -> None:
    for fused in ([], [Hit("adr:0001", "adr:0001", "Chunk", "", 0.5)]):
        text, _ = compose(str(intent), {}, fused)
        clean(text)


def test_ownership_names_nobody_clearly() -> None:
    text = c.owners({"subject": SVC, "owners": []}, c.Citations())
    assert text.startswith("No owner is recorded for frontend") and "checked" in text


def test_composer_functions_with_empty_lists() -> None:
    cites = c.Citations()
    for text in (c.dependencies([], cites, True), c.dependencies([], cites, False),
                 c.memory([], cites), c.attributes([], cites), c.fallback([]),
                 c.window({}, cites), c.when({}, cites), c.rationale({}, cites),
                 c.owners({}, cites), c.switched({}, cites), c.file_added({}, cites),
                 c.listing([], "nothing recorded")):
        clean(text)
    assert c.listing(["", " "], "none") == "none"


def test_other_sentences_with_empty_lists() -> None:
    out = {"pr": {"name": "PR #1", "ceid": "pr:1"}, "status": "no_linked_item"}
    clean(intent_sentence(out))
    clean(impact_sentence({"item": {"name": "E", "ceid": "item:e"}, "services": [],
                           "intents": [], "depth": 1}))


def test_a_found_answer_cites_its_lines() -> None:
    hop = {"type": "CALLS", "from": "service:frontend", "to": "service:contacts",
           "evidence_ref": "kubernetes-manifests/frontend.yaml#L46@e94337d", "source": "git"}
    fact = {"subject": SVC, "object": {"name": "contacts"},
            "intervals": [{"hop": hop, "opened": {"valid_at": "2019-12-13T00:00:00+00:00",
                                                  "commit": "e94337d9" + "0" * 32,
                                                  "note": "e94337d9 hooked up contacts"},
                           "closed": None}]}
    cites = c.Citations()
    text = c.when(fact, cites)
    assert "2019-12-13" in text and "[1]" in text and "still does" in text
    assert cites.items[0]["evidence_ref"].endswith("#L46@e94337d")


def test_nl_cypher_with_no_rows_and_risks_without_factors() -> None:
    from substrate.retrieval.nl_cypher.answer import compose as nl_compose

    for mode in ("rank", "list", "count", None):
        clean(nl_compose({"columns": ["entity"], "rows": [], "mode": mode})[0])


def test_a_count_names_its_members_by_name() -> None:
    from substrate.retrieval.nl_cypher.answer import compose as nl_compose

    fact = {"columns": ["count", "members", "names"], "mode": "count",
            "rows": [[2, ["service:mobile-bff", "service:pricing"], ["mobile-bff", "pricing"]]]}
    assert nl_compose(fact)[0] == "2: mobile-bff, pricing."
    fact = {"columns": ["count", "members"], "mode": "count",  # a /cypher row of that shape
            "rows": [[1, ["service:pricing"]]]}
    assert nl_compose(fact)[0] == "1: service:pricing."


def _hop(frm: str, to: str, ref: str) -> dict[str, Any]:
    return {"from": f"service:{frm}", "to": f"service:{to}", "type": "CALLS",
            "evidence_ref": ref, "address": f"{to}:80"}


def _svc(n: str) -> dict[str, Any]:
    return {"ceid": f"service:{n}", "name": n, "label": "Service"}


def test_callers_past_one_hop_are_named_indirect_with_the_services_between() -> None:
    """A blast-radius answer (callers at depth 3): the direct callers, then the others with
    the services they reach the subject through, in the direction of the calls."""
    pay = _svc("paymentservice")
    h1 = _hop("checkoutservice", "paymentservice", "k8s/checkout.yaml#L60@abc")
    h2 = _hop("frontend", "checkoutservice", "k8s/frontend.yaml#L78@abc")
    h3 = _hop("loadgenerator", "frontend", "k8s/loadgen.yaml#L66@abc")
    facts = [{"subject": pay, "target": _svc("checkoutservice"), "depth": 1, "hops": [h1]},
             {"subject": pay, "target": _svc("frontend"), "depth": 2, "hops": [h1, h2]},
             {"subject": pay, "target": _svc("loadgenerator"), "depth": 3, "hops": [h1, h2, h3]}]
    text = c.dependencies(facts, c.Citations(), True)
    clean(text)
    assert text.startswith("paymentservice is called directly by: checkoutservice "
                           "(CALLS at paymentservice:80)")
    assert "; and indirectly by: frontend (through checkoutservice)" in text
    assert "loadgenerator (through frontend -> checkoutservice)" in text


def test_dependencies_past_one_hop_name_the_chain_from_the_subject() -> None:
    ui = _svc("ui")
    h1 = _hop("ui", "cart", "compose.yml#L10@abc")
    h2 = _hop("cart", "redis", "compose.yml#L20@abc")
    facts = [{"subject": ui, "target": _svc("cart"), "depth": 1, "hops": [h1]},
             {"subject": ui, "target": _svc("redis"), "depth": 2, "hops": [h1, h2]}]
    text = c.dependencies(facts, c.Citations(), False)
    clean(text)
    assert text.startswith("ui depends on: cart (CALLS at cart:80)")
    assert text.endswith("; and indirectly on: redis (through cart)[1][2].")


def test_an_address_that_is_only_the_other_end_s_name_is_not_repeated() -> None:
    """robot-shop's web: ``CART_HOST=cart`` gives the edge the address "cart"; "cart (CALLS at
    cart)" says nothing more than "cart (CALLS)". An address with more stays."""
    facts = [{"subject": _svc("web"), "target": _svc("cart"),
              "hops": [{**_hop("web", "cart", "web/Dockerfile#L26@abc1234"), "address": "cart"}]},
             {"subject": _svc("web"), "target": _svc("user"),
              "hops": [_hop("web", "user", "web/Dockerfile#L25@abc1234")]}]
    text = c.dependencies(facts, c.Citations(), callers=False)
    assert text == "web depends on: cart (CALLS)[1]; user (CALLS at user:80)[2]."


def test_a_yes_or_no_question_says_which_first() -> None:
    """"Does ui call cart?": yes with only the edges that reach what was asked; "does ui use
    a cache?" with none: no, and what ui was found to depend on (what was checked)."""
    ui = _svc("ui")
    cart = {"subject": ui, "target": _svc("cart"), "depth": 1,
            "hops": [_hop("ui", "cart", "compose.yml#L10@abc")]}
    orders = {"subject": ui, "target": _svc("orders"), "depth": 1,
              "hops": [_hop("ui", "orders", "compose.yml#L11@abc")]}
    yes = c.dependencies([{**cart, "check": {"asked": ["cart"], "found": ["service:cart"]}},
                          orders], c.Citations(), False)
    clean(yes)
    assert yes == "Yes: ui depends on: cart (CALLS at cart:80)[1]."
    no = c.dependencies([{**cart, "check": {"asked": ["a cache"], "found": []}}, orders],
                        c.Citations(), False)
    clean(no)
    assert no.startswith("No: no CALLS or DEPENDS_ON edge from ui to a cache is recorded. ui "
                         "depends on: cart (CALLS at cart:80)[1]; orders (CALLS at orders:80)[2]")


def test_a_no_that_is_reached_through_others_says_so() -> None:
    """"Does ui use redis?" with ui -> cart -> redis: not directly, and through what."""
    ui = _svc("ui")
    cart = {"subject": ui, "target": _svc("cart"), "depth": 1,
            "hops": [_hop("ui", "cart", "compose.yml#L10@abc")]}
    deep = {"subject": ui, "target": _svc("redis"), "depth": 2,
            "hops": [_hop("ui", "cart", "compose.yml#L10@abc"),
                     _hop("cart", "redis", "compose.yml#L20@abc")]}
    text = c.dependencies([{**cart, "check": {"asked": ["redis"], "found": [],
                                              "named": ["service:redis"], "through": [deep]}}],
                          c.Citations(), False)
    clean(text)
    assert text == ("Not directly: no CALLS or DEPENDS_ON edge from ui to redis is recorded, "
                    "but ui reaches redis (through cart)[1][2].")


def test_a_no_between_a_producer_and_a_consumer_names_the_broker() -> None:
    """"Does payment call dispatch?" (robot-shop): no edge either way, but payment publishes
    to rabbitmq and dispatch consumes from it. No direct call, and the broker between them,
    each side cited; which one publishes is not claimed."""
    payment = _svc("payment")
    broker = {"subject": payment, "target": _svc("rabbitmq"), "depth": 1,
              "hops": [_hop("payment", "rabbitmq", "payment/rabbitmq.py#L6@abc")]}
    shared = {"other": _svc("dispatch"), "target": _svc("rabbitmq"),
              "hops": [_hop("payment", "rabbitmq", "payment/rabbitmq.py#L6@abc"),
                       _hop("dispatch", "rabbitmq", "dispatch/main.go#L183@abc")]}
    text = c.dependencies([{**broker, "check": {"asked": ["dispatch"], "found": [],
                                                "named": ["service:dispatch"], "through": [],
                                                "shared": [shared]}}], c.Citations(), False)
    clean(text)
    assert text == ("No direct call: no CALLS or DEPENDS_ON edge from payment to dispatch is "
                    "recorded, but dispatch and payment both use rabbitmq[1][2], a message "
                    "broker through which messages may pass between them (which of them "
                    "publishes is not recorded).")


def test_no_datastore_but_the_clients_its_build_declares() -> None:
    """"Where does customers-service store its data?" (spring-petclinic): no datastore among
    its dependencies (each listed as what was checked), and the clients its pom declares."""
    svc = _svc("customers")
    config = {"subject": svc, "target": _svc("config"), "depth": 1,
              "hops": [_hop("customers", "config", "compose.yml#L4@abc")]}
    clients = [{"product": "HSQLDB (embedded)", "evidence_ref": "customers/pom.xml#L14@abc"},
               {"product": "MySQL", "evidence_ref": "customers/pom.xml#L10@abc"}]
    text = c.dependencies([{**config, "clients": clients}], c.Citations(), False)
    clean(text)
    assert text.startswith("No datastore is recorded among the dependencies of customers "
                           "(checked its CALLS and DEPENDS_ON edges). customers depends on: "
                           "config (CALLS at config:80)[1].")
    assert text.endswith("Its build declares clients for: HSQLDB (embedded)[2]; MySQL[3] "
                         "(what it can store data in; which instance it reaches is not "
                         "recorded).")

