"""The /search pipeline: route -> link -> strategies in parallel -> RRF -> rerank ->
context fusion -> answer -> evidence bundle + confidence block.

``emit`` (optional) receives each stage as it finishes, for ``WS /stream`` (RSN-12).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import Any

from opentelemetry.trace import StatusCode

from substrate.errors import BadRequest
from substrate.graph.ontology import load_ontology
from substrate.observability.metrics import STRATEGY_SECONDS
from substrate.observability.tracing import TRACER
from substrate.retrieval import answer as answers
from substrate.retrieval.calibration import calibrated
from substrate.retrieval.composers import fell_back, unknown_names
from substrate.retrieval.conflict_resolution import resolve as resolve_conflicts
from substrate.retrieval.context import Hit, SearchContext, SearchOptions, StrategyResult
from substrate.retrieval.context_fusion import ContextItem, fuse_context
from substrate.retrieval.counterfactual import Engine as CounterfactualEngine
from substrate.retrieval.counterfactual import Options as CounterfactualOptions
from substrate.retrieval.counterfactual import Outcome, answer_entities, shifted_scope
from substrate.retrieval.counterfactual import analyse as analyse_counterfactuals
from substrate.retrieval.counterfactual import compare as compare_outcomes
from substrate.retrieval.decision_mentions import decisions_mentioning
from substrate.retrieval.decision_recent import decisions_by_date
from substrate.retrieval.evidence import build_bundle, build_confidence
from substrate.retrieval.fusion import RankedHit, rrf_fuse
from substrate.retrieval.history_facts import when_results
from substrate.retrieval.linking import link_entities, named_seeds
from substrate.retrieval.mentions import entity_candidates
from substrate.retrieval.nl_cypher import hook as nl_cypher
from substrate.retrieval.page_quotes import TEXT_TOP, asks_how_to, asks_what_it_is, quoted_page
from substrate.retrieval.rationale import asks_in_force, in_force, rationale, unasked
from substrate.retrieval.registry import (
    RISK_PLAN,
    STRATEGIES,
    answered,
    first_stage,
    plan_for,
    primary_first,
    subject_seeds,
)
from substrate.retrieval.rerank import HttpReranker, LocalReranker
from substrate.retrieval.router import Intent, classify
from substrate.retrieval.time_scope import pin_scope
from substrate.security.pii import redact

Emit = Callable[[str, dict[str, Any]], Awaitable[None]]
FOUND_NOT_ASKED = 0.8  # an ADR's quotes answering a question no family took: less sure
STRATEGY_TIMEOUT = 20.0


async def _no_emit(stage: str, data: dict[str, Any]) -> None:
    return None


async def _same(plan: list[str]) -> list[str]:
    return plan


class _Watched(list[dict[str, Any]]):
    """Seeds that note whether a strategy looked at them."""

    read = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self.read = True
        return super().__iter__()

    def __len__(self) -> int:
        self.read = True
        return super().__len__()

    def __getitem__(self, i: Any) -> Any:
        self.read = True
        return super().__getitem__(i)


class _Early:
    """The answering strategy of a one-traversal family started on the seeds the gazetteer
    found, while the fuzzy linking runs: kept when the full seeds give it the same subject
    (``registry.subject_seeds``; they only append to the gazetteer's) or it never read them."""

    def __init__(self, ctx: SearchContext, name: str, named: list[dict[str, Any]]) -> None:
        self.name, self.named = name, named
        self.seeds = _Watched(named)
        self.started = time.perf_counter()
        self.task = asyncio.ensure_future(self._run(replace(ctx, seeds=self.seeds)))

    async def _run(self, ctx: SearchContext) -> StrategyResult:
        return await asyncio.wait_for(STRATEGIES[self.name](ctx), STRATEGY_TIMEOUT)

    async def result(self, plan: list[str], staged: bool, seeds: list[dict[str, Any]]
                     ) -> tuple[StrategyResult, float] | None:
        """Its result when it holds for ``seeds`` (the full ones) and ``plan``, else None
        (cancelled: the plan runs the strategy again)."""
        same = subject_seeds(self.name, seeds) == subject_seeds(self.name, self.named)
        if not (staged and plan[0] == self.name) or (not same and self.seeds.read):
            self.cancel()
            return None
        try:
            result = await self.task
        except Exception:  # noqa: BLE001 - run again in the plan: it reports the failure
            return None
        return (result, self.started) if same or not self.seeds.read else None

    def cancel(self) -> None:
        self.task.cancel()
        self.task.add_done_callback(lambda t: t.cancelled() or t.exception())


async def _run_one(ctx: SearchContext, name: str, emit: Emit,
                   ready: tuple[StrategyResult, float] | None = None
                   ) -> StrategyResult | Exception:
    """``ready``: the strategy's result already computed (``_Early``) and when it started."""
    started = time.perf_counter() if ready is None else ready[1]
    with TRACER.start_as_current_span(f"strategy {name}",
                                      attributes={"substrate.strategy": name}) as span:
        try:
            result = ready[0] if ready is not None else \
                await asyncio.wait_for(STRATEGIES[name](ctx), STRATEGY_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - one failing strategy degrades, never fails
            STRATEGY_SECONDS.labels(name, "failed").observe(time.perf_counter() - started)
            span.set_status(StatusCode.ERROR, repr(exc)[:200])
            await emit("strategy", {"name": name, "status": "failed", "error": repr(exc)[:300]})
            return exc
        span.set_attribute("substrate.hits", len(result.hits))
    STRATEGY_SECONDS.labels(name, "ok").observe(time.perf_counter() - started)
    ms = round((time.perf_counter() - started) * 1000, 1)
    await emit("strategy", {"name": name, "status": "ok", "ms": ms,
                            "hits": [h.__dict__ for h in result.hits[:10]],
                            "truncated": result.truncated, "note": result.note})
    return result


# the families that answer about a named entity from the graph's edges
ABOUT_ENTITIES = frozenset({Intent.DEPENDENCY, Intent.CALLERS, Intent.OWNERSHIP,
                            Intent.ATTRIBUTES, Intent.EPIC_IMPACT})


async def _quoted(ctx: SearchContext, fused: list[Hit], reranker: Any, intent: Intent,
                  results: dict[str, StrategyResult]) -> tuple[str, StrategyResult] | None:
    """A question no family answered: the sentences of the ADR it matches best
    (:func:`rationale.unasked`), else of the README or documentation page
    (:func:`page_quotes.quoted_page`); a how-to question ("how do I deploy manually?") tries
    the pages first. ``(answered as, result)``, or None."""
    text_hits = [h for name in ("keyword", "vector") if name in results
                 for h in results[name].hits[:TEXT_TOP]]
    tries: list[tuple[str, Any]] = [("documentation", partial(quoted_page,
                                                              text_hits=text_hits))]
    if intent is not Intent.DECISION_RATIONALE:
        tries.insert(0, ("decision_rationale", unasked))
    if asks_how_to(ctx.query) or (asks_what_it_is(ctx.query) and any(
            s.get("label") == "Repository" for s in ctx.seeds)):  # "what is GSP?": its README
        tries.reverse()
    for answered_as, find in tries:
        found = await find(ctx, fused, reranker)
        if found is not None:
            return answered_as, found
    return None


async def _run_plan(ctx: SearchContext, plan: list[str], emit: Emit, staged: bool,
                    ready: tuple[StrategyResult, float] | None = None
                    ) -> tuple[dict[str, StrategyResult], dict[str, str]]:
    """Each strategy of ``plan`` in parallel; ``staged``: the first alone, the others only when
    it found no facts to answer from (``registry.primary_first``); ``ready``: the first's
    result, already computed."""
    first = first_stage(plan) if staged else plan
    stages = [first, [n for n in plan if n not in first]] if staged else [plan]
    results: dict[str, StrategyResult] = {}
    failed: dict[str, str] = {}
    for stage in stages:
        outcomes = await asyncio.gather(*(
            _run_one(ctx, n, emit, ready if n == plan[0] else None) for n in stage))
        for n, o in zip(stage, outcomes, strict=True):
            if isinstance(o, StrategyResult):
                results[n] = o
            else:
                failed[n] = repr(o)[:300]
        if staged and plan[0] in results and answered(plan[0], results[plan[0]]):
            break
    return results, failed


def _fuse(results: dict[str, StrategyResult], top_k: int) -> list[Hit]:
    lists = {n: [RankedHit(h.id, h.score) for h in r.hits] for n, r in results.items() if r.hits}
    by_id: dict[str, Hit] = {}
    for r in results.values():
        for h in r.hits:
            if h.id not in by_id or len(h.text) > len(by_id[h.id].text):
                by_id[h.id] = h
    fused = rrf_fuse(lists, k=60, top_k=top_k * 2)
    return [Hit(c.id, by_id[c.id].name, by_id[c.id].label, by_id[c.id].text, round(c.score, 6))
            for c in fused]


async def _rerank(reranker: LocalReranker | HttpReranker, query: str, hits: list[Hit],
                  top_k: int) -> tuple[list[Hit], dict[str, Any]]:
    if not hits:
        return hits, {"backend": "none"}
    with TRACER.start_as_current_span("rerank", attributes={"substrate.candidates": len(hits)}):
        outcome = await reranker.rerank(query, [f"{h.name}. {h.text}" for h in hits], top_k,
                                        [h.score for h in hits])
    ranked = [hits[r.index] for r in outcome.results]
    return ranked, {"backend": outcome.backend, "fallback_reason": outcome.fallback_reason}


def _context(results: dict[str, StrategyResult], fused: list[Hit], budget: int) -> Any:
    ontology = load_ontology()

    def ends(h: dict[str, Any]) -> tuple[str, str]:
        # the subject of a single-valued fact is the end the ontology names (a service has
        # one PRIMARY_OWNER: the target), so a team owning two services is no conflict
        side = ontology.single_valued_side(h["type"])
        return (h["to"], h["from"]) if side == "target" else (h["from"], h["to"])

    items = [ContextItem(id=f"{h['from']}-{h['type']}-{h['to']}",
                         text=f"{h['from']} {h['type']} {h['to']}", score=1.0,
                         subject=ends(h)[0], predicate=h["type"], object=ends(h)[1],
                         evidence_ref=h["evidence_ref"], source=h["source"],
                         confidence=h["confidence"])
             for r in results.values() for h in r.hops]
    items += [ContextItem(id=h.id, text=f"{h.name}: {h.text}", score=h.score) for h in fused]
    return fuse_context(items, max_tokens=budget, single_valued={"PRIMARY_OWNER", "SUPERSEDES"})


async def search(ctx_factory: Callable[..., SearchContext], query: str,
                 options: SearchOptions, reranker: LocalReranker | HttpReranker,
                 emit: Emit = _no_emit, chat: tuple[str, str] | None = None) -> dict[str, Any]:
    started = time.perf_counter()
    route = classify(query, now=datetime.now(UTC))
    ctx = ctx_factory(route=route)
    if route.intent not in (Intent.TEMPORAL, Intent.WHEN):  # "who owned X in 2021?"
        pinned = await pin_scope(ctx)
        ctx = ctx if pinned is None else ctx_factory(route=route, scope=pinned)
    ctx.emit = emit  # strategies stream partial results (global map step)
    mentions = list(dict.fromkeys([*route.mentions, *entity_candidates(query)]))
    plan = list(options.strategies or plan_for(route.intent, query))
    named = await named_seeds(ctx.reader, ctx.scope, query)
    early = _Early(ctx, plan[0], named) if options.strategies is None and primary_first(
        route.intent, plan) and subject_seeds(plan[0], named) is not None else None
    # NL→Cypher leads where no structured family answers well (a risk question: the stored
    # ranking answers); its parse (CPU) runs while Neo4j links the mentions
    claimed = options.strategies is None and plan != list(RISK_PLAN)
    try:
        ctx.seeds, plan = await asyncio.gather(
            link_entities(ctx.reader, ctx.scope, mentions, query, named),
            nl_cypher.plan_with_fallback(ctx, plan) if claimed else _same(plan))
    except BaseException:
        if early is not None:
            early.cancel()
        raise
    unknown = [n for n in plan if n not in STRATEGIES]
    if unknown:
        raise BadRequest("unknown strategies", {"unknown": unknown, "known": sorted(STRATEGIES)})
    staged = options.strategies is None and primary_first(route.intent, plan)
    ready = None if early is None else await early.result(plan, staged, ctx.seeds)
    await emit("route", {"route": route.to_dict(), "entities": ctx.seeds,
                         "plan": plan[:1] if staged else plan,  # "then": if it finds nothing
                         **({"then": plan[1:]} if staged else {})})
    results, failed = await _run_plan(ctx, plan, emit, staged, ready)
    fused = _fuse(results, options.top_k)
    rerank_info: dict[str, Any] = {"backend": "skipped"}
    if options.rerank:
        fused, rerank_info = await _rerank(reranker, query, fused, options.top_k)
    fused = fused[: options.top_k]
    if route.intent is Intent.DECISION_RATIONALE:
        listed = await decisions_mentioning(ctx)  # "which decisions mention Redis?"
        dated = await decisions_by_date(ctx) if listed is None else None  # "the latest ADR"
        quoted = await rationale(ctx, fused, reranker) \
            if listed is None and dated is None else None
        if quoted is not None and asks_in_force(query):  # "why did we move away from X?"
            quoted = await in_force(ctx, quoted, reranker)
        results = results if quoted is None else {**results, "rationale": quoted}
        results = results if listed is None else {**results, "decision_mentions": listed}
        results = results if dated is None else {**results, "decision_recent": dated}
    if route.intent is Intent.WHEN:  # a switch to a value, an edge, a file, an entity
        results = await when_results(ctx, fused, results)
    asserted = results
    results, resolutions = resolve_conflicts(results, load_ontology(), options.conflict_strategy)
    context = _context(results, fused, options.token_budget)
    text, citations = answers.compose(str(route.intent), results, fused)
    answered_as = str(route.intent)
    # a graph question about something the graph lacks ("what does payment depend on?" with no
    # payment) is answered by saying so, not by a page that happens to say "payment"
    unlinked = bool(route.mentions) and not ctx.seeds
    unasked_by = await _quoted(ctx, fused, reranker, route.intent, results) \
        if fell_back(text) and not (unlinked and route.intent in ABOUT_ENTITIES) else None
    if unasked_by is not None:  # "what is our backup strategy?", "how do I run the tests?"
        answered_as, found = unasked_by
        results = {**results, found.name: found}
        text, citations = answers.compose(answered_as, results, fused)
    answer_confidence, composed = calibrated(answered_as, results, text), text
    if answered_as != str(route.intent):  # the record matched the question; nothing asked it
        answer_confidence = round(answer_confidence * FOUND_NOT_ASKED, 3)
    text, citations = nl_cypher.answer(results, text, citations)
    if unlinked and fell_back(text):  # "who owns the cart service?" and nothing is called cart
        text = unknown_names(list(route.mentions), text)
    if chat is not None:
        try:
            evidence = redact("\n".join(i.text for i in context.items))[0]  # PII stays out
            text = await answers.generate(chat[0], chat[1], query, evidence, citations)
        except Exception as exc:  # noqa: BLE001 - the composed answer stands
            failed["explain"] = repr(exc)[:300]
    await emit("answer", {"answer": text, "citations": citations})
    bundle = build_bundle(ctx, results, context, asserted, resolutions)
    confidence = nl_cypher.flag(build_confidence(ctx, results, plan, bool(failed)), results)
    if text in (composed, nl_cypher.EMPTY_READING + composed):  # the composed answer stands
        # (NL→Cypher did not replace it; at most it said its reading matched nothing)
        confidence = {**confidence, "evidence_confidence": confidence["confidence"],
                      "confidence": answer_confidence}
    elif nl_cypher.says_nothing_matches(text):  # "nothing matches" is the answer
        confidence = nl_cypher.empty_confidence(confidence, results)
    counterfactual = None
    cf_options = CounterfactualOptions.parse(options.counterfactual)
    if cf_options is not None:
        counterfactual = await _counterfactual(ctx_factory, ctx, query, options, cf_options,
                                               str(route.intent), results, fused, reranker)
        confidence["robustness"] = counterfactual["robustness"]
    await emit("bundle", {"evidence_bundle": bundle, "confidence": confidence})
    return {
        "query": query, "answer": text, "citations": citations,
        "route": {**route.to_dict(), "why": _why(route), **nl_cypher.route_fields(results)},
        "entities": ctx.seeds,
        "results": [h.__dict__ for h in fused],
        "strategies": {n: {"status": "ok", "hits": len(r.hits), "truncated": r.truncated,
                           "note": r.note, **({"trace": r.trace} if r.trace else {})}
                       for n, r in results.items()}
        | {n: {"status": "failed", "error": e} for n, e in failed.items()},
        "degraded": sorted(failed), "rerank": rerank_info,
        **({"pending": pending} if (pending := sorted(
            {r.pending for r in results.values() if r.pending})) else {}),
        "graph_context": _graph_context(results),
        "snapshot_version": ctx.scope.version, "pinned": ctx.scope.pinned,
        "evidence_bundle": bundle, "confidence": confidence,
        **({"counterfactual": counterfactual} if counterfactual is not None else {}),
        "timing_ms": round((time.perf_counter() - started) * 1000, 1),
    }


async def _counterfactual(ctx_factory: Callable[..., SearchContext], ctx: SearchContext,
                          query: str, options: SearchOptions, cf: CounterfactualOptions,
                          intent: str, results: dict[str, StrategyResult], fused: list[Hit],
                          reranker: LocalReranker | HttpReranker) -> dict[str, Any]:
    """The counterfactual report; a temporal shift re-runs retrieval at the earlier pin."""
    seeds = [s["ceid"] for s in ctx.seeds]
    engine = CounterfactualEngine(answers.compose, intent, results, fused, seeds, cf.budget)
    report = analyse_counterfactuals(engine, cf)
    if cf.shift_to is not None:
        earlier = await shifted_scope(ctx, cf.shift_to)
        if engine.used >= engine.budget:
            report["truncated"] = True
        else:
            engine.used += 1
            plain = replace(options, counterfactual=None)
            shifted = await search(lambda **kw: ctx_factory(**kw, scope=earlier), query, plain,
                                   reranker)
            other = Outcome(shifted["answer"], answer_entities(shifted["citations"], seeds))
            report["temporal_shift"] = {"snapshot_version": earlier.version,
                                        **compare_outcomes(engine.base, other)}
            report["recomputations"] = engine.used
    return report


def _graph_context(results: dict[str, StrategyResult]) -> dict[str, Any]:
    """chunk-graph-rag GraphContext: how each graph-discovered chunk was reached."""
    chunk = results.get("chunk_graph")
    if chunk is None:
        return {}
    return {f["chunk"]: f["graph_context"] for f in chunk.facts if f["graph_context"]}


def _why(route: Any) -> str:
    cues = ", ".join(f"'{c.text}'" for c in route.cues[:4]) or "no specific cue"
    return f"classified as {route.intent} (confidence {route.confidence:.2f}) from {cues}"
