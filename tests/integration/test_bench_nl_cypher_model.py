"""``bench_nl_cypher`` scores a configured ``cypher`` endpoint beside the embedded translator:
the local OpenAI-compatible server (real HTTP) is scripted with the right Cypher for two demo
questions, a wrong one for a third and an invalid one for a fourth; the bench runs them
through the Text2Cypher strategy forced and reports right / wrong / abstained and latency.
Without an endpoint it says the role is not configured. (The scoring path, not a model's
quality.)"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from substrate.settings import Settings
from tests.bench.bench_nl_cypher import bench
from tests.support.nl_questions import load
from tests.support.openai_stub_server import OpenAIStubServer

SCRIPT = {
    "Which services call auth?": "```cypher\nMATCH (s:Service)-[:CALLS]->"
                                 "(:Service {ceid: 'service:auth'})\n"
                                 "RETURN DISTINCT s.ceid AS ceid, s.name AS name\n```",
    "How many SEV1 incidents are there?": "MATCH (f:FailurePattern {severity: 'SEV1'}) "
                                          "RETURN count(f) AS count",
    "How many teams are there?": "MATCH (s:Service) RETURN count(s) AS count",  # wrong
    "Which services call feature-flags?": "MATCH (s:Service)-[:CALLS]->(t RETURN s",  # invalid
}
IDS = ("d04", "d19", "d31", "d08")
QUESTION = re.compile(r"Input:\n(.*?)\n\nDo not use", re.S)


def respond(prompt: str) -> str:
    found = QUESTION.search(prompt)
    assert found is not None, "the Text2Cypher prompt carries the question"
    return SCRIPT[found.group(1).strip()]


def demo(ids: tuple[str, ...] = IDS) -> dict[str, list[dict[str, Any]] | None]:
    by_id = {q["id"]: q for q in load("demo_acme.jsonl")}
    return {"demo": [by_id[i] for i in ids]}


def test_the_bench_scores_a_configured_cypher_endpoint(stack: Settings,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    with OpenAIStubServer(chat_responder=respond) as server:
        settings = replace(stack, env={**stack.env, "MODEL_CYPHER_URL": server.base_url,
                                       "MODEL_CYPHER_NAME": "cypher-lora",
                                       "MODEL_MAX_RETRIES": "0"})
        report = bench(settings, demo())
        calls = [b for p, b in server.requests if p == "/v1/chat/completions"]
    out = capsys.readouterr().out
    assert f"cypher model role: cypher-lora at {server.base_url}" in out
    model = report["model"]
    assert model["configured"] and model["model"] == "cypher-lora"
    figures = model["datasets"]["demo"]["all"]
    assert (figures["questions"], figures["answered"], figures["right"], figures["wrong"]) \
        == (4, 3, 2, 1)
    assert figures["p50_ms"] > 0 and figures["p95_ms"] >= figures["p50_ms"]
    assert {(m["id"], m["status"]) for m in model["misses"]} == {("d31", "wrong"),
                                                                 ("d08", "abstained")}
    wrong = next(m for m in model["misses"] if m["id"] == "d31")
    assert wrong["expected"] == {"count": 11} and wrong["got"] != wrong["expected"]
    assert model["overall"]["confidence"]["wrong_high_confidence"] == 0  # a model's prior < 0.7
    # five calls: one per question, and the repair round of the invalid query
    assert len(calls) == 5 and all(c["model"] == "cypher-lora" for c in calls)
    # the embedded translator is scored beside it on the same questions
    assert report["datasets"]["demo"]["all"]["questions"] == 4
    assert "model demo / all: 4 questions, answered 3, right 2" in out


def test_without_an_endpoint_the_bench_says_it_is_not_configured(
        stack: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    settings = replace(stack, chat_url="", env={**stack.env, "MODEL_CYPHER_URL": "",
                                                "MODEL_EXPLAIN_URL": ""})
    report = bench(settings, demo(IDS[:1]))
    assert report["model"] == {"configured": False}
    assert "cypher model role: not configured" in capsys.readouterr().out
    assert report["datasets"]["demo"]["all"]["right"] == 1
