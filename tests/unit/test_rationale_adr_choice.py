"""Which ADR answers "why X?" (issue 8): the fused order's first, unless another candidate's
title (or file name) is clearly closer to the question."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from substrate.retrieval.rationale import (
    TITLE_MARGIN,
    asks_in_force,
    by_title,
    content_words,
    on_topic,
    title_text,
)
from substrate.retrieval.rerank import RerankOutcome, RerankResult


class Scripted:
    """Scores each title by the words of the question it contains (what a reranker would
    prefer), and records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    async def rerank(self, query: str, documents: Sequence[str], top_k: int | None = None
                     ) -> RerankOutcome:
        self.asked.append(list(documents))
        words = {w.strip("?").lower() for w in query.split()}
        scores = [len(words & {w.lower() for w in d.split()}) / 10 for d in documents]
        order = sorted(range(len(documents)), key=lambda i: -scores[i])
        return RerankOutcome(tuple(RerankResult(i, scores[i]) for i in order), "local")


def row(name: str, path: str, text: str = "body") -> dict[str, Any]:
    return {"entity": {"ceid": "x", "name": name}, "props": {"path": path, "text": text}}


ROWS = {
    "adr:0030": row("Django state control after upgrading to Django 5.2",
                    "docs/decisions/0030-django-state-control.md"),
    "adr:0015": row("Use Django-FSM library for domain request state",
                    "docs/decisions/0015-use-django-fsm.md"),
    "adr:0016": row("Django Form Wizard", "docs/decisions/0016-django-form-wizard.md"),
}


def test_the_title_and_the_file_name_name_the_decision() -> None:
    assert title_text({"name": "In-Progress Audit Deletion Workflow"},
                      "docs/0042-gracefully-handle-samgov-4xx-errors.md") == (
        "In-Progress Audit Deletion Workflow gracefully handle samgov 4xx errors")
    assert title_text({"name": "Caching"}, None) == "Caching"


def test_a_title_clearly_closer_to_the_question_comes_first() -> None:
    reranker = Scripted()
    order = asyncio.run(by_title("Why use Django-FSM library for domain request state?",
                                 ["adr:0030", "adr:0015", "adr:0016"], ROWS, reranker))
    assert order == ["adr:0015", "adr:0030", "adr:0016"]
    assert reranker.asked[0][1] == (
        "Use Django-FSM library for domain request state use django fsm")


def test_the_fused_first_stays_unless_another_title_is_closer_by_the_margin() -> None:
    # "django" is in every title; "state" puts 0030 and 0015 level: no clear winner
    order = asyncio.run(by_title("Why django state?", ["adr:0030", "adr:0015", "adr:0016"],
                                 ROWS, Scripted()))
    assert order == ["adr:0030", "adr:0015", "adr:0016"]
    assert TITLE_MARGIN > 0


def test_a_title_sharing_no_content_word_with_the_question_does_not_displace() -> None:
    """"why", "we", "use" are in the question and in a title of no subject: the reranker may
    prefer it by more than the margin, yet it does not answer the question."""
    rows = {"adr:0004": row("Cache sessions in Redis", "docs/adr/0004-cache-sessions.md"),
            "adr:0009": row("Why we use what we use", "docs/adr/0009-why-we-use.md")}
    question = "Why do we use Redis for caching?"
    outcome = asyncio.run(Scripted().rerank(question, ["Why we use what we use why we use"]))
    assert outcome.results[0].score >= 0.1 + TITLE_MARGIN  # closer by the margin, in form
    order = asyncio.run(by_title(question, ["adr:0004", "adr:0009"], rows, Scripted()))
    assert order == ["adr:0004", "adr:0009"]
    assert content_words("Use Django-FSM library for domain request states") == {
        "django", "fsm", "librari", "domain", "request", "state"}  # English stems
    assert content_words("Deploying manually") == {"deploy", "manual"}


def test_candidates_without_text_are_not_compared() -> None:
    rows = {**ROWS, "adr:0015": row("Use Django-FSM library", "0015-use-django-fsm.md", "")}
    reranker = Scripted()
    order = asyncio.run(by_title("Why use Django-FSM library?", ["adr:0030", "adr:0015"],
                                 rows, reranker))
    assert order == ["adr:0030", "adr:0015"] and reranker.asked == []  # one left: no call


def test_a_question_for_a_list_of_records_is_not_one_records_rationale() -> None:
    from substrate.retrieval.rationale import asks_for_records

    for q in ("Which decisions are superseded or deprecated?", "Which ADRs were accepted?",
              "Which decision records are still proposed?", "List the ADRs that are open"):
        assert asks_for_records(q), q
    for q in ("Why was ADR 3 superseded?", "What decisions have we made about caching?",
              "Which ADR covers sessions?", "What did ADR 21 decide?"):
        assert not asks_for_records(q), q


def test_a_record_answers_an_unasked_question_only_when_it_shares_a_third_of_its_words() -> None:
    """``on_topic``: the record's title and quotes against the question's content words."""
    backups = {"adr": {"name": "adr:0031 Backups of the RDS databases"},
               "quotes": [{"text": "Snapshots are taken nightly and kept for 35 days."}]}
    assert on_topic("What is our backup strategy for databases?", backups)  # 1 of 3 words
    assert on_topic("How are the RDS databases backed up?", backups)  # rds, databases
    assert not on_topic("Which subnets can reach the Kubernetes ingress?", backups)
    flags = {"adr": {"name": "adr:0014 Feature flags served by the config service"},
             "quotes": [{"text": "The API reads flags at start-up."}]}
    assert not on_topic("Which Kafka topics does the API publish to?", flags)
    assert not on_topic("the and of", flags)  # no content word: never on topic


def test_words_most_records_name_are_left_out_of_the_count() -> None:
    network = {"adr": {"name": "adr:0001 Restrict network access"},
               "quotes": [{"text": "We will allow network access to the platform via the VPN."}]}
    question = "Which PostgreSQL version does the platform use?"
    assert on_topic(question, network)  # "platform": 1 of its 3 content words
    assert not on_topic(question, network, frozenset({"platform"}))
    assert not on_topic("The platform?", network, frozenset({"platform"}))  # nothing left


def test_a_question_in_the_graphs_own_words_is_no_records_topic() -> None:
    """"list services with no owner" asks the graph: a README naming its service and owner
    does not answer it."""
    readme = {"adr": {"name": "services/wishlist/README.md"},
              "quotes": [{"text": "The wishlist service is owned by the web team."}]}
    assert not on_topic("list services with no owner", readme)
    assert on_topic("How is the wishlist service deployed?", readme | {
        "quotes": [{"text": "The wishlist service is deployed with Helm."}]})


def test_leaving_a_decision_or_asking_what_holds_now_asks_for_the_record_in_force() -> None:
    for q in ("Why did we move away from ECR?", "Why did we stop using Jenkins?",
              "Why was Swarm replaced?", "What do we use for CI now?",
              "Why did we switch from Travis to GitHub Actions?", "Why did we migrate off Heroku?"):
        assert asks_in_force(q), q
    for q in ("Why did we choose ECR?", "Why did FAC switch to a unified Django web app?",
              "What was decided about logging?"):
        assert not asks_in_force(q), q
