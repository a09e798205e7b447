"""Question understanding: direction of dependency questions, the attribute and "when"
families, qualifiers naming the repository, and linking of lower-case/partial names."""

from __future__ import annotations

from typing import Any

import pytest

from substrate.retrieval.gazetteer import match_names, name_keys
from substrate.retrieval.mentions import extract_mentions, strip_qualifiers
from substrate.retrieval.router import Intent, classify


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        ("Which services depend on balancereader?", Intent.CALLERS),
        ("What depends on ledger-db?", Intent.CALLERS),
        ("who depends on the accounts db", Intent.CALLERS),
        ("what uses accounts-db?", Intent.CALLERS),
        ("Which services connect to userservice?", Intent.CALLERS),
        ("What are userservice's consumers?", Intent.CALLERS),
        ("dependents of contacts", Intent.CALLERS),
        ("who calls ledgerwriter", Intent.CALLERS),
        ("What does frontend depend on?", Intent.DEPENDENCY),
        ("What does frontend use?", Intent.DEPENDENCY),
        ("what is used by frontend", Intent.DEPENDENCY),
        ("What are the dependencies of frontend?", Intent.DEPENDENCY),
        ("Which datastore does ledgerwriter use, and at what address?", Intent.ATTRIBUTES),
        ("Which port does ledger-db listen on?", Intent.ATTRIBUTES),
        ("When did frontend start calling contacts?", Intent.WHEN),
        ("When did frontend stop calling balancereader?", Intent.WHEN),
        ("Who owned frontend in 2021?", Intent.OWNERSHIP),
    ],
)
def test_families_and_direction(question: str, intent: Intent) -> None:
    assert classify(question).intent is intent


def test_a_past_time_qualifies_other_families() -> None:
    route = classify("What did frontend depend on in January 2020?")
    assert route.intent is Intent.DEPENDENCY and route.time.as_of is not None


@pytest.mark.parametrize(
    ("question", "stripped"),
    [("In Bank of Anthos, which services depend on balancereader?",
      "which services depend on balancereader?"),
     ("For the FAC project, why did we pick Django?", "why did we pick Django?"),
     ("who owns frontend in the bank-of-anthos repo?", "who owns frontend?"),
     ("who owns frontend?", "who owns frontend?"),
     ("Which team owns the most paths in CODEOWNERS?", "Which team owns the most paths?"),
     ("Who owns docs according to the OWNERS file?", "Who owns docs?")],
)
def test_qualifiers_naming_the_repository_are_ignored(question: str, stripped: str) -> None:
    assert strip_qualifiers(question) == stripped
    assert "Bank" not in extract_mentions(question) and "Anthos" not in extract_mentions(question)


def _names() -> list[tuple[str, dict[str, Any]]]:
    ents = [{"ceid": f"service:{n}", "name": n, "label": "Service"}
            for n in ("frontend", "balancereader", "ledger-db", "ledgerwriter", "userservice",
                      "contacts", "accounts-db", "transactionhistory")]
    ents.append({"ceid": "infra:balancereader", "name": "balancereader",
                 "label": "Infrastructure"})
    return [(k, e) for e in ents for k in name_keys(e, ["frontend-nodeport"]
                                                    if e["name"] == "frontend" else [])]


@pytest.mark.parametrize(
    ("question", "linked"),
    [("connect to userservice", ["service:userservice"]),
     ("who calls the user service", ["service:userservice"]),
     ("When did frontend start calling contacts?", ["service:frontend", "service:contacts"]),
     ("the ledger-db gain", ["service:ledger-db"]),
     ("which services read from the accounts db", ["service:accounts-db"]),
     ("what does the balance service do", ["service:balancereader"]),  # unique prefix
     ("the ledger service", []),  # ledger-db or ledgerwriter: not guessed
     ("is frontend-nodeport public?", ["service:frontend"]),  # alias
     ("Which services depend on balancereader?",
      ["service:balancereader", "infra:balancereader"])],  # the service first
)
def test_lower_case_partial_and_alias_names(question: str, linked: list[str]) -> None:
    assert [e["ceid"] for e in match_names(question, _names())] == linked


def test_a_unique_prefix_of_infrastructure_links_when_no_service_begins_so() -> None:
    """"Which services use redis?" (Online Boutique: the store is redis-cart): a prefix of
    one infrastructure name links it when it begins no service's name; a service still wins,
    and a prefix of two infrastructure names links neither."""
    names = _names() + [(k, e) for e in (
        {"ceid": "infra:redis-cart", "name": "redis-cart", "label": "Infrastructure"},
        {"ceid": "infra:frontend-lb", "name": "frontend-lb", "label": "Infrastructure"},
        {"ceid": "infra:postgres-a", "name": "postgres-a", "label": "Infrastructure"},
        {"ceid": "infra:postgres-b", "name": "postgres-b", "label": "Infrastructure"},
    ) for k in name_keys(e, [])]
    assert [e["ceid"] for e in match_names("Which services use redis?", names)] \
        == ["infra:redis-cart"]
    assert [e["ceid"] for e in match_names("what uses red", names)] == []  # 4 letters at least
    # frontend (a service) and frontend-lb both begin so: the service
    assert [e["ceid"] for e in match_names("what uses fronte", names)] == ["service:frontend"]
    assert match_names("which services use postgres", names) == []


def test_a_unique_ending_links_a_release_prefixed_name() -> None:
    """opentelemetry-demo's rendered chart names its broker opentelemetry-demo-kafka: "kafka"
    begins no name and ends exactly one (after a dash); an ending two names share links none."""
    names = _names() + [(k, e) for e in (
        {"ceid": "infra:opentelemetry-demo-kafka", "name": "opentelemetry-demo-kafka",
         "label": "Infrastructure"},
        {"ceid": "infra:orders-mysql", "name": "orders-mysql", "label": "Infrastructure"},
        {"ceid": "infra:catalog-mysql", "name": "catalog-mysql", "label": "Infrastructure"},
    ) for k in name_keys(e, [])]
    assert [e["ceid"] for e in match_names("Which services use kafka?", names)] \
        == ["infra:opentelemetry-demo-kafka"]
    assert match_names("which services use mysql", names) == []


def test_a_longer_name_at_one_place_links_first() -> None:
    """"the catalog namespace" is the namespace before the service called catalog."""
    ents = [{"ceid": "service:catalog", "name": "catalog", "label": "Service"},
            {"ceid": "infra:namespace-catalog", "name": "catalog namespace",
             "label": "Infrastructure"}]
    names = [(k, e) for e in ents for k in name_keys(e, [])]
    assert [e["ceid"] for e in match_names("What runs in the catalog namespace?", names)] \
        == ["infra:namespace-catalog", "service:catalog"]
    assert [e["ceid"] for e in match_names("Who owns catalog?", names)] == ["service:catalog"]
