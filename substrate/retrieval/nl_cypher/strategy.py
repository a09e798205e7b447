"""The ``nl_cypher`` strategy: translate (embedded parser, then the ``cypher`` role), run the
query through the ``POST /cypher`` guard and scope (``run_cypher``: grammar, allow-lists,
scope rewrite, EXPLAIN plan check, read transaction), repair a model's failed query once, and
say why when it falls back (the other strategies of the plan are the hybrid fallback).

``facts[0]`` records what happened: translator, the Cypher that ran, its parameters, every
attempt with its outcome, the rows, the fallback reason and the model usage.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from substrate.errors import Forbidden, SubstrateError
from substrate.llm.roles import RoleLLM, Usage, role_config
from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.cypher_run import run_cypher
from substrate.retrieval.nl_cypher import assumptions as assumed
from substrate.retrieval.nl_cypher import rows as row_tools
from substrate.retrieval.nl_cypher.emit import to_cypher
from substrate.retrieval.nl_cypher.parser import parse
from substrate.retrieval.nl_cypher.schema import load_schema, question_schema, schema_text
from substrate.retrieval.nl_cypher.tagger import Unparsed
from substrate.retrieval.nl_cypher.text2cypher import generate
from substrate.retrieval.registry import register
from substrate.settings import ENV_DEFAULTS

NAME = "nl_cypher"


def translator_mode(ctx: SearchContext) -> str:
    return ctx.settings.env.get("NL_CYPHER_TRANSLATOR") or ENV_DEFAULTS["NL_CYPHER_TRANSLATOR"]


async def _execute(ctx: SearchContext, query: str, params: dict[str, Any],
                   translator: str) -> dict[str, Any]:
    """One attempt through the /cypher path; the outcome names what happened."""
    attempt: dict[str, Any] = {"translator": translator, "cypher": query, "params": params}
    s = ctx.settings
    try:
        result = await run_cypher(ctx.services.async_driver, ctx.scope, query, params,
                                  min(s.cypher_row_limit, 200), s.cypher_timeout_seconds,
                                  s.cypher_max_bytes, sessions=ctx.reader.cypher_sessions)
    except Forbidden as exc:
        return {**attempt, "outcome": "refused", "error": exc.message, "status": exc.status}
    except SubstrateError as exc:
        outcome = "invalid" if exc.status == 400 else "failed"
        return {**attempt, "outcome": outcome, "error": exc.message, "status": exc.status,
                "detail": exc.detail}
    outcome = "ok" if result["rows"] else "empty"
    return {**attempt, "outcome": outcome, "result": result}


async def _embedded(ctx: SearchContext, attempts: list[dict[str, Any]]) -> dict[str, Any] | None:
    schema = await question_schema(ctx.reader, ctx.scope, ctx.query)
    try:
        plan = parse(ctx.query, schema, datetime.now(UTC))
    except Unparsed as exc:
        attempts.append({"translator": "embedded", "outcome": "unparsed", "error": str(exc)})
        return None
    query, params = to_cypher(ctx.reader.cypher, plan)
    attempt = await _execute(ctx, query, params, "embedded")
    attempt.update(mode=plan.mode, shape=plan.shape, assumptions=plan.assumptions)
    if (lacking := plan.lacking()) is not None:
        attempt["lacking"] = lacking
    attempts.append(attempt)
    return attempt


async def _model(ctx: SearchContext, attempts: list[dict[str, Any]],
                 usage: Usage) -> dict[str, Any] | None:
    config = role_config(ctx.settings, "cypher")
    if not config.configured:
        return None
    _, triples = await load_schema(ctx.reader, ctx.scope)
    schema = schema_text(triples, ctx.services.ontology.labels)
    llm = RoleLLM(config)
    try:
        failed: tuple[str, str] | None = None
        for _round in range(2):  # the first try and one repair round
            try:
                query = await generate(llm, ctx.query, schema, usage, failed)
            except Exception as exc:  # noqa: BLE001 - any model failure means fallback
                attempts.append({"translator": "model", "outcome": "model_error",
                                 "error": f"{type(exc).__name__}: {str(exc)[:200]}"})
                return None
            attempt = await _execute(ctx, query, {}, "model")
            attempt["repair"] = failed is not None
            attempts.append(attempt)
            if attempt["outcome"] != "invalid":
                return attempt
            failed = (query, str(attempt["error"]))
        return None
    finally:
        await llm.aclose()


async def nl_cypher(ctx: SearchContext) -> StrategyResult:
    result = StrategyResult(NAME)
    attempts: list[dict[str, Any]] = []
    usage = Usage()
    mode = translator_mode(ctx)
    answer = await _embedded(ctx, attempts) if mode in ("auto", "embedded") else None
    if (answer is None or answer["outcome"] != "ok") and mode in ("auto", "model"):
        answer = await _model(ctx, attempts, usage) or answer
    fact: dict[str, Any] = {"attempts": attempts, "usage": usage.summary()}
    if answer is not None and answer["outcome"] == "ok":
        rows = answer["result"]
        fact.update(translator=answer["translator"], cypher=answer["cypher"],
                    params=answer["params"], mode=answer.get("mode", "rows"),
                    columns=rows["columns"], rows=rows["rows"], truncated=rows["truncated"],
                    assumptions=answer.get("assumptions", []))
        fact["confidence"] = assumed.confidence(fact["translator"], fact["mode"], fact["rows"],
                                                fact["assumptions"])
        result.hits = [Hit(e["ceid"], str(e.get("name") or e["ceid"]), e.get("label", ""),
                           f"{e.get('name') or e['ceid']}: answer of the NL→Cypher query",
                           round(1.0 / (1 + n), 6))
                       for n, e in enumerate(row_tools.entities(rows["columns"], rows["rows"]))]
        result.hops = row_tools.evidence(rows["columns"], rows["rows"])
        result.truncated = bool(rows["truncated"])
        result.note = f"{answer['translator']} translator: {len(rows['rows'])} row(s)"
    else:
        fact["fallback"] = fallback_reason(attempts)
        result.note = "fallback to hybrid retrieval: " + fact["fallback"]
    result.facts = [fact]
    return result


def fallback_reason(attempts: list[dict[str, Any]]) -> str:
    if not attempts:
        return "no translator available (embedded translator off, no cypher model role)"
    parts = []
    for a in attempts:
        what = {"unparsed": "could not parse", "empty": "query returned no rows",
                "refused": "query refused by the /cypher guard", "invalid": "invalid query",
                "failed": "query failed", "model_error": "model call failed"}[a["outcome"]]
        detail = f" ({a['error']})" if a.get("error") else ""
        parts.append(f"{a['translator']}: {what}{detail}")
    return "; ".join(parts)


register(NAME, nl_cypher)  # no preset of its own: hook.plan_with_fallback puts it first
