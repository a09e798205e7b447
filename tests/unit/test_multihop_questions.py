"""Issue 13's question set for RAPTOR against flat community search and local retrieval
(``tests/bench/bench_raptor.py``): at least 30 multi-hop questions with expected entities,
over the demo and the ``../shared/devset/`` repositories."""

from __future__ import annotations

from tests.bench.bench_raptor import STRATEGIES
from tests.bench.multihop_questions import QUESTIONS
from tests.support import devset


def test_the_set_has_thirty_questions_over_the_demo_and_the_devset() -> None:
    assert len(QUESTIONS) >= 30
    assert len({q.text for q in QUESTIONS}) == len(QUESTIONS)
    corpora = {q.corpus for q in QUESTIONS}
    assert "demo" in corpora
    others = corpora - {"demo"}
    assert others and all(c.startswith("devset-") for c in others)
    for corpus in others:  # each devset tenant is cloned from its bundle
        assert devset.bundle(corpus.removeprefix("devset-")).exists(), corpus


def test_every_question_names_the_entities_an_answer_must_name() -> None:
    for q in QUESTIONS:
        assert q.expected and all(e.startswith(("service:", "infra:")) for e in q.expected), q


def test_raptor_is_compared_with_flat_community_search_and_local_retrieval() -> None:
    assert {"raptor", "community_search", "local_graphrag"} <= set(STRATEGIES)
