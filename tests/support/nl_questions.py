"""The NL→Cypher execution-accuracy set (``tests/questions/*.jsonl``): questions with the
result rows expected by reading the graphs' sources, and one evaluation of the embedded
translator through the /cypher path (``run_cypher``) — shared by the benchmark and the test;
:func:`evaluate_model` runs a question through the ``nl_cypher`` strategy with the ``cypher``
model role forced (Text2Cypher, guard, scope, EXPLAIN, one repair)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from substrate.retrieval.context import SearchContext, SearchOptions
from substrate.retrieval.cypher_run import run_cypher
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.nl_cypher.assumptions import confidence
from substrate.retrieval.nl_cypher.emit import to_cypher
from substrate.retrieval.nl_cypher.parser import parse
from substrate.retrieval.nl_cypher.rows import entities
from substrate.retrieval.nl_cypher.schema import question_schema
from substrate.retrieval.nl_cypher.strategy import nl_cypher
from substrate.retrieval.nl_cypher.tagger import Unparsed
from substrate.retrieval.router import classify
from substrate.retrieval.scope import ReadScope
from substrate.services import Services

QUESTIONS = Path(__file__).resolve().parent.parent / "questions"


@dataclass(frozen=True)
class Outcome:
    qid: str
    question: str
    use_case: bool
    status: str  # right | wrong | abstained
    ms: float
    got: Any
    expected: Any
    shape: str = ""
    confidence: float = 0.0  # what /search reports for this answer (``assumptions.confidence``)
    assumptions: tuple[str, ...] = ()


def load(name: str = "demo_acme.jsonl") -> list[dict[str, Any]]:
    return [json.loads(line) for line in (QUESTIONS / name).read_text().splitlines() if line]


def _answer(mode: str, columns: list[str], rows: list[list[Any]]) -> Any:
    if mode == "count":
        return {"count": rows[0][0] if rows else 0}
    return sorted(e["ceid"] for e in entities(columns, rows))


async def evaluate(services: Services, scope: ReadScope, item: dict[str, Any]) -> Outcome:
    reader = GraphReader(services.async_driver, services.cypher)
    started = time.perf_counter()
    schema = await question_schema(reader, scope, item["q"])
    expected = item["expect"] if isinstance(item["expect"], dict) else sorted(item["expect"])
    try:
        plan = parse(item["q"], schema)
    except Unparsed as exc:
        ms = (time.perf_counter() - started) * 1000
        return Outcome(item["id"], item["q"], item["uc"], "abstained", ms, str(exc), expected)
    query, params = to_cypher(services.cypher, plan)
    s = services.settings
    result = await run_cypher(services.async_driver, scope, query, params, 1000,
                              s.cypher_timeout_seconds, s.cypher_max_bytes)
    ms = (time.perf_counter() - started) * 1000
    got = _answer(plan.mode, result["columns"], result["rows"])
    status = "right" if got == expected else "wrong"
    score = confidence("embedded", plan.mode, result["rows"], plan.assumptions)
    return Outcome(item["id"], item["q"], item["uc"], status, ms, got, expected, plan.shape,
                   score, tuple(plan.assumptions))


def _model_answer(expected: Any, columns: list[str], rows: list[list[Any]]) -> Any:
    """A model's rows read the way the question asks: a count from a one-row numeric result
    (else the number of entities returned), otherwise the returned entities."""
    if isinstance(expected, dict):
        numbers = [v for v in (rows[0] if len(rows) == 1 else ())
                   if isinstance(v, int) and not isinstance(v, bool)]
        return {"count": numbers[0] if len(numbers) == 1 else len(entities(columns, rows))}
    return sorted(e["ceid"] for e in entities(columns, rows))


async def _no_embedding(text: str) -> list[float]:
    raise RuntimeError("the nl_cypher strategy needs no embedding")


async def evaluate_model(services: Services, scope: ReadScope, item: dict[str, Any]) -> Outcome:
    """One question through the ``nl_cypher`` strategy; ``services.settings`` must force the
    model (``NL_CYPHER_TRANSLATOR=model``). The last query that ran is scored (an empty result
    too: the set has questions whose answer is nothing); abstained when none ran."""
    expected = item["expect"] if isinstance(item["expect"], dict) else sorted(item["expect"])
    ctx = SearchContext(services.settings, item["q"], classify(item["q"]), scope,
                        GraphReader(services.async_driver, services.cypher),
                        embed_query=_no_embedding, options=SearchOptions(), services=services)
    started = time.perf_counter()
    fact = (await nl_cypher(ctx)).facts[0]
    ms = (time.perf_counter() - started) * 1000
    ran = [a for a in fact["attempts"] if "result" in a]
    if not ran:
        return Outcome(item["id"], item["q"], item["uc"], "abstained", ms,
                       fact.get("fallback"), expected, "model")
    result = ran[-1]["result"]
    got = _model_answer(expected, result["columns"], result["rows"])
    score = confidence("model", "count" if isinstance(expected, dict) else "list",
                       result["rows"], [])
    return Outcome(item["id"], item["q"], item["uc"], "right" if got == expected else "wrong",
                   ms, got, expected, "model", score)
