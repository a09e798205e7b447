"""The embedded NL→Cypher translator on a hand-made schema: shapes, typing, refusals."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from substrate.cypher import CypherLibrary
from substrate.retrieval.nl_cypher.emit import to_cypher
from substrate.retrieval.nl_cypher.hook import _one_hop_about_an_entity
from substrate.retrieval.nl_cypher.lexicon import base_lexicon, entity_phrases, with_value_states
from substrate.retrieval.nl_cypher.parser import Schema, parse
from substrate.retrieval.nl_cypher.tagger import Unparsed
from substrate.retrieval.nl_cypher.timewin import find_windows
from substrate.retrieval.router import Intent

NOW = datetime(2026, 11, 22, tzinfo=UTC)
TRIPLES = frozenset({
    ("Service", "CALLS", "Service"), ("Service", "DEPENDS_ON", "Infrastructure"),
    ("Service", "DEPENDS_ON", "Service"), ("Team", "OWNS", "Service"),
    ("Team", "PRIMARY_OWNER", "Service"), ("Developer", "OWNS", "Service"),
    ("Developer", "MEMBER_OF", "Team"), ("DecisionNode", "SUPERSEDES", "DecisionNode"),
    ("DecisionNode", "WHY", "Service"), ("FailurePattern", "AFFECTED", "Service"),
})
ENTITIES = entity_phrases([
    {"ceid": "team:payments", "label": "Team", "name": "Payments"},
    {"ceid": "service:payment", "label": "Service", "name": "payment",
     "aliases": ["paymentservice"]},
    {"ceid": "service:checkout", "label": "Service", "name": "checkout"},
    {"ceid": "service:search", "label": "Service", "name": "search"},
    {"ceid": "adr:0003", "label": "DecisionNode", "name": "Synchronous REST"},
])
SCHEMA = Schema(TRIPLES, ENTITIES)


def cypher(question: str) -> tuple[str, dict[str, object], str]:
    plan = parse(question, SCHEMA, NOW)
    text, params = to_cypher(CypherLibrary.load(), plan)
    return " ".join(text.split()), params, plan.shape


def test_two_hop_composition_types_call_to_a_database_as_depends_on() -> None:
    text, params, _ = cypher("Which services owned by team payments call a database?")
    assert "MATCH (n:Service) WHERE EXISTS { MATCH (n)<-[:OWNS|PRIMARY_OWNER]-(m1:Team)" in text
    assert "(n)-[:DEPENDS_ON]->(m2:Infrastructure) WHERE m2.kind = $p1" in text
    assert params == {"p0": "team:payments", "p1": "database"}


def test_negation_with_no_owner() -> None:
    text, params, _ = cypher("list services with no owner")
    assert "NOT EXISTS { MATCH (n)<-[:OWNS|PRIMARY_OWNER]-(m1:Developer|Team) }" in text
    assert params == {}


def test_comparison_counts_distinct_services() -> None:
    text, params, _ = cypher("Which teams own more than three services?")
    assert "COUNT { MATCH (n)-[:OWNS|PRIMARY_OWNER]->(m1:Service) RETURN DISTINCT m1 } > $p0" \
        in text
    assert params == {"p0": 3}


def test_count_of_superseded_adrs_in_a_month_filters_the_edge_time() -> None:
    text, params, shape = cypher("How many ADRs were superseded in September 2026?")
    assert shape == "count" and "RETURN count(DISTINCT n) AS count" in text
    assert "r_m1.valid_from_ts >= datetime($p0) AND r_m1.valid_from_ts < datetime($p1)" in text
    assert params == {"p0": "2026-09-01T00:00:00+00:00", "p1": "2026-10-01T00:00:00+00:00"}


@pytest.mark.parametrize(("question", "shape"), [
    ("what is the most depended-on service?", "rank_adj_first"),
    ("which team owns the most services", "rank_rel"),
    ("which service has the most callers", "rank_noun"),
    ("who owns checkout", "who"),
    ("what does paymentservice depend on", "objects"),
    ("which services does checkout call?", "listing_objects"),
    ("owners of checkout", "noun_of"),
    ("how many incidents affected checkout?", "count"),
])
def test_shapes(question: str, shape: str) -> None:
    assert cypher(question)[2] == shape


def test_user_values_are_parameters_never_text() -> None:
    text, params, _ = cypher("which services call payment")
    assert "service:payment" not in text and params == {"p0": "service:payment"}


def test_an_entity_named_like_a_word_reads_as_the_entity_after_its_label() -> None:
    _, params, _ = cypher("which services call service search")
    assert params == {"p0": "service:search"}


@pytest.mark.parametrize(("question", "reason"), [
    ("what is the meaning of life", "words outside the vocabulary: meaning, life"),
    ("which teams call a database", "'call' does not connect Team and Infrastructure"),
    ("which incidents supersede checkout", "does not connect"),
    ("services services services", "no reading"),
])
def test_what_it_cannot_parse_it_says(question: str, reason: str) -> None:
    with pytest.raises(Unparsed, match=reason):
        parse(question, SCHEMA, NOW)


def test_time_windows() -> None:
    (w,) = find_windows("ADRs superseded last quarter", NOW)
    assert (w.start, w.end) == (datetime(2026, 7, 1, tzinfo=UTC), datetime(2026, 10, 1, tzinfo=UTC))
    (w,) = find_windows("incidents before 2026-09-01", NOW)
    assert (w.start, w.end) == (None, datetime(2026, 9, 1, tzinfo=UTC))
    (w,) = find_windows("PRs in Q3 2026", NOW)
    assert w.start == datetime(2026, 7, 1, tzinfo=UTC)


DB_SCHEMA = Schema(TRIPLES, entity_phrases([
    *({"ceid": c, "label": lb, "name": n} for c, lb, n in (
        ("service:web", "Service", "web"), ("infrastructure:db", "Infrastructure", "db"),
        ("infrastructure:app", "Infrastructure", "app"))),
]))


@pytest.mark.parametrize("question", [
    "Which services use db?", "How many services use db?", "which services depend on the db",
    "services that call db",
])
def test_a_bare_singular_noun_that_names_an_entity_is_the_entity(question: str) -> None:
    plan = parse(question, DB_SCHEMA, NOW)
    assert "infrastructure:db" in plan.params.values()
    assert "database" not in plan.params.values()
    assert any("as the entity infrastructure:db" in a for a in plan.assumptions)


@pytest.mark.parametrize("question", [
    "Which services use a db?", "which services use any db", "which services use dbs",
    "services that use no db", "which db does web use", "how many dbs are there",
])
def test_an_article_a_plural_or_a_question_word_makes_it_the_kind(question: str) -> None:
    plan = parse(question, DB_SCHEMA, NOW)
    assert "database" in plan.params.values()
    assert "infrastructure:db" not in plan.params.values()


def test_the_entity_reading_that_does_not_type_check_gives_way_to_the_word() -> None:
    # "app" names an Infrastructure entity, but "apps" owned by a team are services
    plan = parse("which team owns app", DB_SCHEMA, NOW)
    assert "infrastructure:app" not in plan.params.values()


@pytest.mark.parametrize("question", ["Which services does the payments team own?",
                                      "Which services does team payments own?",
                                      "How many services does the Payments team own?"])
def test_an_entity_followed_by_its_label_is_that_entity(question: str) -> None:
    text, params, _ = cypher(question)
    assert "MATCH (n:Service) WHERE EXISTS { MATCH (n)<-[:OWNS|PRIMARY_OWNER]-(m1:Team)" in text
    assert params == {"p0": "team:payments"}


def test_a_label_after_an_entity_of_another_label_is_refused() -> None:
    with pytest.raises(Unparsed, match="'payments' is not a Service"):
        parse("Which teams own the payments service?", SCHEMA, NOW)


def test_on_a_team_is_membership() -> None:
    """"What team is rkumar on?", "which developers are on the payments team?": "on" is a
    membership verb like "in" (it was outside the vocabulary); "depends on" stays one phrase."""
    schema = Schema(TRIPLES, {**ENTITIES, **entity_phrases(
        [{"ceid": "dev:rkumar", "label": "Developer", "name": "rkumar"}])})
    for question, shape, ceid in (("what team is rkumar on?", "listing_objects", "dev:rkumar"),
                                  ("which developers are on the payments team?", "listing",
                                   "team:payments")):
        plan = parse(question, schema, NOW)
        text, params = to_cypher(CypherLibrary.load(), plan)
        assert plan.shape == shape and ":MEMBER_OF" in text and params["p0"] == ceid
    assert "DEPENDS_ON" in cypher("what does paymentservice depend on")[0]


LANG_ROWS = [
    {"ceid": "service:checkout", "label": "Service", "name": "checkout", "language": "Go"},
    {"ceid": "service:cart", "label": "Service", "name": "cart", "language": "C#"},
    {"ceid": "service:currency", "label": "Service", "name": "currency", "language": "Node.js"},
    {"ceid": "service:ads", "label": "Service", "name": "ads",
     "language": "Java, with a Python sidecar for the model"},
    {"ceid": "service:payment", "label": "Service", "name": "payment"},
    {"ceid": "service:loadgen", "label": "Service", "name": "loadgen", "language": "Python/Locust"},
    {"ceid": "service:email", "label": "Service", "name": "email", "language": "Python"},
]
LANG_SCHEMA = Schema(TRIPLES, entity_phrases(LANG_ROWS),
                     lexicon=with_value_states(base_lexicon(), LANG_ROWS))


@pytest.mark.parametrize(("question", "value"), [
    ("Which services are written in Go?", "Go"),
    ("List the Go services", "Go"),
    ("Which services are implemented in C#?", "C#"),
    ("services written in c sharp", "C#"),
    ("Which services are written in Node.js?", "Node.js"),
    ("How many services are written in Go?", "Go"),
])
def test_a_stated_language_selects_its_services(question: str, value: str) -> None:
    plan = parse(question, LANG_SCHEMA, NOW)
    text, params = to_cypher(CypherLibrary.load(), plan)
    assert "n.language = $p0" in " ".join(text.split())
    assert params["p0"] == value


def test_a_listed_service_cites_the_line_that_states_its_language() -> None:
    text, _ = to_cypher(CypherLibrary.load(), parse("Which services are written in Go?",
                                                    LANG_SCHEMA, NOW))
    assert "r STARTS WITH 'language|'" in text and "evidence_ref: last(split(r, '|'))" in text


def test_a_language_and_a_relationship_compose() -> None:
    text, params, _ = (lambda p: (*to_cypher(CypherLibrary.load(), p), p.shape))(
        parse("Which Go services call payment?", LANG_SCHEMA, NOW))
    flat = " ".join(text.split())
    assert "n.language = $p0" in flat and "(n)-[:CALLS]->(m1:Service)" in flat
    assert params == {"p0": "Go", "p1": "service:payment"}


def test_a_value_of_several_parts_is_read_under_each_part() -> None:
    text, params = to_cypher(CypherLibrary.load(), parse("Which services are written in Python?",
                                                         LANG_SCHEMA, NOW))
    assert "n.language IN $p0" in text and params == {"p0": ["Python", "Python/Locust"]}
    text, params = to_cypher(CypherLibrary.load(), parse("Which services are written in Java?",
                                                         LANG_SCHEMA, NOW))
    assert params == {"p0": "Java, with a Python sidecar for the model"}
    assert parse("services written in locust", LANG_SCHEMA, NOW).params == {"p0": "Python/Locust"}


def test_a_long_part_and_an_unknown_language_are_not_states() -> None:
    with pytest.raises(Unparsed):
        parse("Which services are written in a Python sidecar for the model?", LANG_SCHEMA, NOW)
    with pytest.raises(Unparsed):
        parse("Which services are written in Go?", SCHEMA, NOW)  # no language in the graph


def test_a_filter_after_the_verb_narrows_what_the_entity_relates_to() -> None:
    """"Which services does payment call that are written in Go?": the services, not
    payment, are written in Go."""
    plan = parse("Which services does payment call that are written in Go?", LANG_SCHEMA, NOW)
    text, params = to_cypher(CypherLibrary.load(), plan)
    flat = " ".join(text.split())
    assert ("MATCH (n:Service) WHERE EXISTS { MATCH (n)<-[:CALLS]-(m1:Service) "
            "WHERE m1.ceid = $p0 }"
            " AND n.language = $p1") in flat
    assert params == {"p0": "service:payment", "p1": "Go"}
    assert parse("How many services does payment call that are written in Go?", LANG_SCHEMA,
                 NOW).mode == "count"


def test_working_on_something_is_owning_it() -> None:
    """CODEOWNERS names the people who work on a path: "what does mchen work on?" lists what
    mchen owns; "which developers work on payment?" its developer owners."""
    schema = Schema(TRIPLES, {**ENTITIES, **entity_phrases(
        [{"ceid": "dev:mchen", "label": "Developer", "name": "mchen"}])})
    plan = parse("What does mchen work on?", schema, NOW)
    (cond,) = plan.subject.conds  # the schema's triples: a developer OWNS a service
    assert (cond.types, cond.direction) == (("OWNS",), "in")
    plan = parse("Which developers work on payment?", schema, NOW)
    assert plan.subject.labels == ("Developer",)
    assert plan.subject.conds[0].types == ("OWNS",)
    # "work in" a team stays membership
    plan = parse("Which developers work in the payments team?", schema, NOW)
    assert plan.subject.conds[0].types == ("MEMBER_OF",)


def test_a_handle_as_codeowners_writes_it_names_the_team() -> None:
    text, params, _ = cypher("Which services does @acme/payments own?")
    assert "(n)<-[:OWNS|PRIMARY_OWNER]-(m1:Team)" in text
    assert params == {"p0": "team:payments"}


def test_the_ownership_family_answers_owners_not_what_a_team_owns() -> None:
    """"Who owns checkout" is the family's own question (it lists owners); "which services
    does the payments team own" lists the other side, so the translator leads for it."""
    owners = parse("Which teams own checkout?", SCHEMA, NOW)
    owned = parse("Which services are owned by the payments team?", SCHEMA, NOW)
    assert _one_hop_about_an_entity(owners, Intent.OWNERSHIP)
    assert not _one_hop_about_an_entity(owned, Intent.OWNERSHIP)
    calls = parse("Which services does checkout call?", SCHEMA, NOW)
    callers = parse("Which services call payment?", SCHEMA, NOW)
    assert _one_hop_about_an_entity(calls, Intent.DEPENDENCY)
    assert not _one_hop_about_an_entity(calls, Intent.CALLERS)
    assert _one_hop_about_an_entity(callers, Intent.CALLERS)


def test_paths_and_folders_are_modules() -> None:
    schema = Schema(TRIPLES | {("Team", "OWNS", "Module")}, ENTITIES)
    plan = parse("Which team owns the most paths?", schema, NOW)
    assert plan.mode == "rank" and plan.rank is not None
    assert plan.rank.other is not None and plan.rank.other.labels == ("Module",)
    listed = parse("Which folders does team payments own?", schema, NOW)
    assert listed.subject.labels == ("Module",)


@pytest.mark.parametrize("question", [
    "Which services are there?", "Which services are used?", "What services do we have?",
    "which services are in use", "Which services are currently deployed?",
    "What services does the organisation run?"])
def test_a_closing_clause_with_no_other_end_asks_what_exists(question: str) -> None:
    text, params, _ = cypher(question)
    assert text.startswith("MATCH (n:Service)"), text
    assert "EXISTS" not in text and params == {}


def test_a_clause_naming_its_other_end_stays_a_relation() -> None:
    text, params, _ = cypher("Which services are used by checkout?")
    assert params == {"p0": "service:checkout"}
    text, params, _ = cypher("Which services does checkout use?")
    assert params == {"p0": "service:checkout"}


@pytest.mark.parametrize("question", ["Which datastores are there?", "list the data stores",
                                      "Which datastores are used?"])
def test_a_datastore_is_any_kind_that_keeps_data(question: str) -> None:
    """A cache (redis, valkey) or a search engine keeps data as a database does."""
    text, params, _ = cypher(question)
    assert "MATCH (n:Infrastructure) WHERE n.kind IN $p0" in text
    assert params == {"p0": ["database", "cache", "search", "storage"]}
    # each listed with no edge or stated property to cite is cited where it is defined
    assert "coalesce(n.provenance, [])" in text


def test_a_database_is_still_only_a_database() -> None:
    text, params, _ = cypher("Which databases are there?")
    assert "n.kind = $p0" in text and params == {"p0": "database"}


def test_either_of_two_values_of_one_property() -> None:
    """Adyen's "which decisions are superseded or deprecated?" asks for either status; a
    relation state ("superseded": another record supersedes it) is not one of them."""
    text, params, _ = cypher("Which decisions are rejected or deprecated?")
    assert "MATCH (n:DecisionNode) WHERE n.status IN $p0" in text
    assert params == {"p0": ["rejected", "deprecated"]}
    with pytest.raises(Unparsed, match="is not one property of two values"):
        parse("Which decisions are rejected or superseded?", SCHEMA, NOW)


@pytest.mark.parametrize("question", [
    "How many services are defined in docker-compose?",
    "Which services are in the compose file?",
    "list the services declared in docker compose",
])
def test_what_declares_an_entity_is_a_member_of_its_list(question: str) -> None:
    """deployed_by holds a list ("compose", "k8s"): "in docker-compose" asks for a member."""
    text, params, _ = cypher(question)
    assert "MATCH (n:Service) WHERE $p0 IN coalesce(n.deployed_by, [])" in text
    assert params == {"p0": "compose"}


def test_either_of_two_members_of_a_list_property() -> None:
    text, params, _ = cypher("Which services are in kubernetes or in compose?")
    assert "any(x_ IN $p0 WHERE x_ IN coalesce(n.deployed_by, []))" in text
    assert sorted(params["p0"]) == ["compose", "k8s"]  # type: ignore[arg-type]


def test_a_kubernetes_datastore() -> None:
    text, params, _ = cypher("Which databases run on kubernetes?")
    assert "n.kind = $p0 AND $p1 IN coalesce(n.deployed_by, [])" in text
    assert params == {"p0": "database", "p1": "k8s"}


@pytest.mark.parametrize("question", [
    "List all the architecture decision records",
    "Which architectural decision records are still only proposed?",
])
def test_decision_records_by_their_long_name(question: str) -> None:
    text, _, _ = cypher(question)
    assert text.startswith("MATCH (n:DecisionNode)")
