from __future__ import annotations

import re

import pytest

from substrate.errors import BadRequest
from substrate.retrieval.mentions import (
    MAX_TERMS,
    any_of,
    entity_candidates,
    escape_lucene,
    extract_mentions,
    fuzzy_query,
    listed_together,
)


@pytest.mark.parametrize(
    ("question", "mentions"),
    [
        ("What does PaymentService depend on?", ["PaymentService"]),
        ("Who owns the checkout service?", ["checkout"]),
        ("Find all services calling auth directly", ["auth"]),
        ("Who owns \"Ledger Core\"?", ["Ledger Core"]),
        ("Who owns 'ledger core' and `payment_api`?", ["ledger core", "payment_api"]),
        ("Why was ADR-047 accepted?", ["adr:0047"]),  # a record by its number: its id
        ("Who maintains the payment gateway service?", ["payment gateway"]),
        ("what depends on redis", ["redis"]),
        ("does checkout depend on kafka", ["checkout", "kafka"]),
        ("Which services does epic PAY-12 affect?", ["PAY-12"]),
        ("Is OAuth used by the API gateway?", ["OAuth", "API"]),
        ("What changed before last Friday's outage on March 3?", []),
        ("Who is on-call for point-in-time queries?", []),
    ],
)
def test_extract_mentions(question: str, mentions: list[str]) -> None:
    assert extract_mentions(question) == mentions


def test_apostrophes_are_not_quotes() -> None:
    assert extract_mentions("What changed before Friday's outage in Billing's queue?") == [
        "Billing"]


def test_entity_candidates_give_lookup_variants() -> None:
    assert entity_candidates("What does PaymentService depend on?") == [
        "PaymentService", "payment service", "payment-service", "payment"]
    assert entity_candidates("who calls payment_api") == [
        "payment_api", "payment api", "payment-api", "payment"]
    assert entity_candidates("kafka consumer lag") == []
    assert len(entity_candidates("A B C D E F G H I J K L M N O P Q R S T U V W X Y Z " * 3,
                                 limit=5)) <= 5


def test_fuzzy_query_single_term() -> None:
    assert fuzzy_query("checkout") == "checkout~1 OR checkout*"
    assert fuzzy_query("Checkout") == "checkout~1 OR checkout*"
    assert fuzzy_query("api") == "api OR api*"  # too short for an edit distance
    assert fuzzy_query("checkout", max_edits=2) == "checkout~2 OR checkout*"
    assert fuzzy_query("checkout", max_edits=0) == "checkout OR checkout*"


def test_fuzzy_query_several_terms() -> None:
    assert fuzzy_query("payment gateway") == (
        '"payment gateway" OR ((payment~1 OR payment*) AND (gateway~1 OR gateway*))')
    assert fuzzy_query("payment-service") == (
        '"payment service" OR ((payment~1 OR payment*) AND (service~1 OR service*))')


LUCENE_SYNTAX = re.compile(r'[+\-&|!(){}\[\]^"~*?:\\/]')


@pytest.mark.parametrize(
    "mention",
    [
        'checkout") OR name:* OR ("',
        "a AND b OR NOT c",
        "x || y && !z",
        "name:admin~9^100",
        "[* TO *]",
        "foo\\",
        "/.*x/",
        "{!lucene}x",
    ],
)
def test_fuzzy_query_cannot_carry_lucene_syntax(mention: str) -> None:
    query = fuzzy_query(mention)
    terms = re.findall(r"\w+", mention.lower())
    # everything in the query is one of our own operators around the mention's own words
    stripped = query
    for op in ("~1", "*", " OR ", " AND ", "(", ")", '"'):
        stripped = stripped.replace(op, " ")
    assert set(stripped.split()) <= set(terms)
    assert not re.search(r"\b(AND|OR|NOT)\b", " ".join(terms))


def test_fuzzy_query_bounds_and_errors() -> None:
    long_mention = " ".join(f"w{i}" for i in range(20))
    assert fuzzy_query(long_mention).count("~") + fuzzy_query(long_mention).count(" OR w") \
        <= 2 * MAX_TERMS + 1
    assert len(fuzzy_query("x" * 500)) < 200
    with pytest.raises(BadRequest):
        fuzzy_query("!!! ???")
    with pytest.raises(BadRequest):
        fuzzy_query("/.*/")
    with pytest.raises(ValueError):
        fuzzy_query("checkout", max_edits=3)


def test_escape_lucene() -> None:
    assert escape_lucene('a+b-c && d || !e (f) {g} [h] ^i "j" ~k *l ?m :n \\o /p') == (
        'a\\+b\\-c \\&\\& d \\|\\| \\!e \\(f\\) \\{g\\} \\[h\\] \\^i \\"j\\" \\~k \\*l \\?m '
        '\\:n \\\\o \\/p')
    assert escape_lucene("this AND that OR NOT x TO y") == (
        "this \\AND that \\OR \\NOT x \\TO y")
    assert not LUCENE_SYNTAX.search(escape_lucene("plain words").replace("\\", ""))


def test_any_of() -> None:
    assert any_of(["checkout", "db"]) == "(checkout~1 OR checkout*) OR (db OR db*)"
    assert any_of(["???", "auth"]) == "(auth~1 OR auth*)"
    with pytest.raises(BadRequest):
        any_of(["???"])


def test_a_decision_record_named_by_its_number_is_its_id() -> None:
    from substrate.retrieval.mentions import extract_mentions

    assert extract_mentions("When was ADR 46 added?") == ["adr:0046"]
    assert extract_mentions("Why did we adopt ADR-0012?") == ["adr:0012"]
    assert extract_mentions("Tell me about decision record 7") == ["adr:0007"]
    assert extract_mentions("Which ADRs cite ADR 14?") == ["adr:0014"]


def test_an_adr_seed_is_named_only_when_the_question_gives_its_number() -> None:
    from substrate.retrieval.strategies_facts import named_seed

    by_number = {"ceid": "adr:0046", "label": "DecisionNode", "mention": "adr:0046"}
    by_name = {"ceid": "adr:0029", "label": "DecisionNode", "mention": "ADR process"}
    service = {"ceid": "service:web", "label": "Service", "mention": "web"}
    assert named_seed(by_number) and named_seed(service) and not named_seed(by_name)


def _seed(mention: str) -> dict[str, object]:
    return {"ceid": f"service:{mention}", "mention": mention, "label": "Service"}


@pytest.mark.parametrize(("question", "expected"), [
    ("Who owns ad, and who owns checkout?", ["ad", "checkout"]),
    ("who owns cart and the checkout service", ["cart", "checkout"]),
    ("Owners of ad & cart & checkout?", ["ad", "cart", "checkout"]),
    ("Who owns checkout, which calls payment?", ["checkout"]),  # payment is no subject
    ("Who owns checkout?", ["checkout"]),
    ("who reads ad-hoc data in checkout, and ad?", ["checkout", "ad"]),  # 'ad' as a word
])
def test_the_subjects_a_question_lists(question: str, expected: list[str]) -> None:
    seeds = [_seed(m) for m in ("payment", "checkout", "ad", "cart")]
    assert [s["mention"] for s in listed_together(question, seeds)] == expected
