""""When" answers from the change log (issue 8): which file a question names, which value a
"switch to" question names, and how a changed element's facts are stated."""

from __future__ import annotations

import pytest

from substrate.retrieval import composers as c
from substrate.retrieval.history_facts import (
    _refs_naming,
    best_path,
    names_file,
    stem,
    switch_term,
)

PATHS = ["src/ui/docker-compose.yml", "src/app/docker-compose.yml",
         "src/app/docker-compose.tracing.yml", "deploy/kubernetes/charts/ui/values.yaml",
         ".github/CODEOWNERS", "kubernetes-manifests/userservice.yaml", "src/ui/Dockerfile"]


@pytest.mark.parametrize(("question", "path"), [
    ("When was the ui compose file added?", "src/ui/docker-compose.yml"),
    ("When was the tracing compose overlay added?", "src/app/docker-compose.tracing.yml"),
    ("When was CODEOWNERS first added?", ".github/CODEOWNERS"),
    ("When was the Dockerfile of ui created?", "src/ui/Dockerfile"),
    ("When was the helm values file of ui added?", "deploy/kubernetes/charts/ui/values.yaml"),
    ("When was the payments file added?", None),
])
def test_the_file_a_question_names(question: str, path: str | None) -> None:
    assert best_path(question, PATHS) == path


def test_a_file_is_asked_for_by_a_file_word_or_its_whole_name() -> None:
    assert names_file("When was the tracing compose overlay added?", PATHS)
    assert names_file("When was CODEOWNERS first added?", PATHS)
    assert names_file("When was the ui manifest added?", PATHS)
    assert not names_file("When did ui first appear?", PATHS)


@pytest.mark.parametrize(("question", "term"), [
    ("When did orders switch to PostgreSQL?", "postgresql"),
    ("When did orders move from MySQL to PostgreSQL?", "postgresql"),
    ("When did catalog start using OpenSearch?", "opensearch"),
    ("When did the team adopt Kafka?", "kafka"),
    ("When did checkout migrate to DynamoDB?", "dynamodb"),
    ("When did loadgenerator start calling frontend?", None),
    ("When did orders switch to it?", None),
])
def test_the_value_a_switch_question_names(question: str, term: str | None) -> None:
    assert switch_term(question) == term


def test_stems_match_the_written_forms() -> None:
    assert stem("postgresql") == "postgres" and "postgres" in "image: postgres:16.1"
    assert stem("mysql") == "mysql" and stem("opensearch") == "opensear"


def test_the_line_stating_the_value_is_cited_before_a_variable_name() -> None:
    after = {"label": "Infrastructure", "props": {"attribute_refs": [
        "env|POSTGRES_USER|compose.yml#L108@abc1234",
        "image|postgres:16.1|compose.yml#L100@abc1234",
        "port|5432|compose.yml#L110@abc1234"]}}
    assert _refs_naming(after, "postgres")[:2] == ["compose.yml#L100@abc1234",
                                                   "compose.yml#L108@abc1234"]
    edge = {"type": "DEPENDS_ON", "evidence_ref": "compose.yml#L91@abc1234", "props": {
        "address": "jdbc:postgresql://orders-db:5432/orders"}}
    assert _refs_naming(edge, "postgres") == ["compose.yml#L91@abc1234"]


def test_a_changed_element_states_what_changed() -> None:
    node = {"kind": "node", "change": "changed", "label": "Infrastructure", "id": "infra:db",
            "name": "orders-db", "changed_keys": {
                "image": {"before": "mysql:5.7", "after": "postgres:16.1"},
                "env": {"before": ["A=1"], "after": ["B=2"]}}}
    assert c.what_changed(node) == " (image mysql:5.7 -> postgres:16.1)"
    edge = {"kind": "edge", "change": "changed", "changed_keys": {"props": {
        "before": {"address": "jdbc:mysql://db:3306/o", "via": "env"},
        "after": {"address": "jdbc:postgresql://db:5432/o", "via": "env", "port": 5432}}}}
    assert c.what_changed(edge) == (" (address jdbc:mysql://db:3306/o -> "
                                    "jdbc:postgresql://db:5432/o; port unset -> 5432)")
    assert c.what_changed({"changed_keys": {}}) == ""
    line = c._change_line({**node, "snapshot": {"commit": "60e17c443d87", "valid_at":
                                                "2024-01-03T23:51:30Z"}}, c.Citations())
    assert line == ("changed Infrastructure orders-db (image mysql:5.7 -> postgres:16.1) "
                    "in 60e17c44 on 2024-01-03")


def test_switch_and_file_answers_cite_their_line() -> None:
    cites = c.Citations()
    snap = {"commit": "60e17c443d87", "valid_at": "2024-01-03T23:51:30Z",
            "note": "60e17c443d87 Migrated orders to PostgreSQL"}
    text = c.switched({"subject": {"ceid": "service:orders", "name": "orders"},
                       "term": "postgresql", "element": "infra:orders-db", "kind": "node",
                       "snapshot": snap, "hop": {"type": "CHANGED", "to": "infra:orders-db",
                                                 "evidence_ref": "c.yml#L100@60e17c4"}}, cites)
    assert text.startswith("orders switched to postgresql on 2024-01-03 (commit 60e17c44")
    assert "gave orders-db a value naming postgresql[1]" in text
    text = c.file_added({"path": "src/ui/docker-compose.yml", "snapshot": snap,
                         "hop": {"type": "DEFINED", "evidence_ref": "src/ui/x.yml#L20@60e17c4"}},
                        cites)
    assert text.startswith("src/ui/docker-compose.yml was added on 2024-01-03") and "[2]" in text
    assert [i["evidence_ref"] for i in cites.items] == ["c.yml#L100@60e17c4",
                                                        "src/ui/x.yml#L20@60e17c4"]


def test_a_changed_element_cites_the_lines_its_commit_wrote() -> None:
    snap = {"commit": "4edb66e1a7bb10f3243ed18ecd0926df5209d4a2", "valid_at": "2020-03-26"}
    refs = ["m/ledger-db.yaml#L18@132e331", "m/ledger-db.yaml#L50@4edb66e", "no-line"]
    assert c.changed_lines(refs, snap) == ["m/ledger-db.yaml#L50@4edb66e",
                                           "m/ledger-db.yaml#L18@132e331"]
    assert c.changed_lines(refs[:1], snap, only=True) == []
    node = {"kind": "node", "change": "changed", "label": "Infrastructure", "id": "infra:l",
            "name": "ledger-db", "snapshot": snap, "changed_keys": {},
            "evidence": ["m/ledger-db.yaml#L18@132e331"],
            "after": {"attribute_refs": ["env|DEFAULT_ACCOUNT|m/ledger-db.yaml#L50@4edb66e",
                                         "image|ledger-db|m/ledger-db.yaml#L30@132e331"]}}
    cites = c.Citations()
    assert c._change_line(node, cites).endswith("in 4edb66e1 on 2020-03-26[1]")
    assert [i["evidence_ref"] for i in cites.items] == ["m/ledger-db.yaml#L50@4edb66e"]
    cites = c.Citations()  # no line of its own commit: where it is defined
    c._change_line({**node, "after": {}}, cites)
    assert [i["evidence_ref"] for i in cites.items] == ["m/ledger-db.yaml#L18@132e331"]


def test_owners_in_a_window_are_named_as_their_ownership_file_writes_them() -> None:
    snap = {"commit": "a775d7e3e5869259301ca73962a5f8c76c193b7e", "valid_at": "2023-05-24"}
    team = {"kind": "node", "change": "added", "label": "Team", "id": "team:dotgov",
            "name": "dotgov", "snapshot": snap, "after": {"handle": "@cisagov/dotgov"}}
    owns = {"kind": "edge", "change": "added", "type": "OWNS", "from": "dev:abroddrick",
            "to": "service:app", "snapshot": snap, "evidence": [],
            "after": {"props": {"handle": "@abroddrick", "pattern": "*"}},
            "hop": {"type": "OWNS", "evidence_ref": ".github/CODEOWNERS#L4@a775d7e"}}
    cites = c.Citations()
    assert c._change_line(team, cites).startswith("added Team @cisagov/dotgov in a775d7e3")
    assert c._change_line(owns, cites).startswith(
        "added @abroddrick -OWNS-> service:app (rule *) in a775d7e3")
    calls = {**owns, "type": "CALLS", "after": {"props": {"handle": "@x"}}}
    assert c._change_line(calls, cites).startswith("added dev:abroddrick -CALLS->")
