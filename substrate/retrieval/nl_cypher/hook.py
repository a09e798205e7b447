"""Where the ``nl_cypher`` strategy meets the /search pipeline (``search.py`` calls these).

The router's structured families answer one-hop questions about a named entity well ("what
does payment depend on?", "who owns checkout?"); every other question the embedded
translator reads (counts, negation, comparisons, superlatives, compositions, lists of a
label), every ``free_text`` question and every weakly routed one goes to ``nl_cypher`` first,
with hybrid retrieval (vector, keyword) beside it as the fallback. Its answer replaces the
composed one when it returned rows; when it fell back, ``low_confidence_warning`` is set with
the reason.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from substrate.llm.roles import role_config
from substrate.retrieval.answer import Citation
from substrate.retrieval.context import SearchContext, StrategyResult
from substrate.retrieval.nl_cypher import answer as nl_answer
from substrate.retrieval.nl_cypher import assumptions as assumed
from substrate.retrieval.nl_cypher.parser import DATED_EVENTS, parse
from substrate.retrieval.nl_cypher.plan import Plan
from substrate.retrieval.nl_cypher.schema import question_schema
from substrate.retrieval.nl_cypher.strategy import NAME, translator_mode
from substrate.retrieval.nl_cypher.tagger import Unparsed
from substrate.retrieval.router import Intent

FAMILIES_ANSWER = {Intent.DEPENDENCY, Intent.CALLERS, Intent.OWNERSHIP,
                   Intent.DECISION_RATIONALE, Intent.EPIC_IMPACT, Intent.INTENT_MISMATCH,
                   Intent.TEMPORAL, Intent.STRATEGIC_RISKS, Intent.ATTRIBUTES, Intent.WHEN}
WELL_ROUTED = 0.5
EMPTY_READING = ("The question's reading as a graph query ran and matched nothing (its "
                 "Cypher is in route.nl_cypher.attempts); what hybrid retrieval found instead: ")
EMPTY_ONLY = ("Nothing matches: the question's reading as a graph query ran and returned no "
              "rows (its Cypher is in route.nl_cypher.attempts), and no other retrieval "
              "found a grounded answer.")
HYBRID = ("vector", "keyword")


# the relationships each family answers about; a one-hop question over others ("which team
# does mchen belong to?" routed to ownership by "which team") is the translator's
FAMILY_TYPES = {Intent.OWNERSHIP: frozenset({"OWNS", "PRIMARY_OWNER"}),
                Intent.DEPENDENCY: frozenset({"CALLS", "DEPENDS_ON", "IMPORTS", "HOSTS"}),
                Intent.CALLERS: frozenset({"CALLS", "DEPENDS_ON", "IMPORTS", "HOSTS"})}

# the side a family lists, seen from the listed node: an owner owns the named entity ("out"),
# a dependency is called by it ("in"), a caller calls it ("out"); "which services does the
# payments team own?" lists the other side, which the ownership family does not read
FAMILY_DIRECTION = {Intent.OWNERSHIP: "out", Intent.DEPENDENCY: "in", Intent.CALLERS: "out"}


def _one_hop_about_an_entity(plan: Plan, intent: Intent) -> bool:
    """A list of one entity's neighbours over the relationships ``intent``'s family reads,
    on the side it lists."""
    conds = plan.subject.conds
    return (plan.mode == "list" and len(conds) == 1 and conds[0].kind == "rel"
            and not conds[0].negated and conds[0].other is not None
            and conds[0].direction == FAMILY_DIRECTION.get(intent, conds[0].direction)
            and [c.kind for c in conds[0].other.conds] == ["ceid"]
            and bool(FAMILY_TYPES.get(intent, frozenset(conds[0].types))
                     & set(conds[0].types)))


async def claims(ctx: SearchContext) -> bool:
    """Does ``nl_cypher`` lead for this question?"""
    route = ctx.route
    window = route.intent is Intent.TEMPORAL and route.time.start is not None
    weak = route.intent is Intent.FREE_TEXT or route.confidence < WELL_ROUTED
    mode = translator_mode(ctx)
    if mode in ("auto", "embedded"):
        schema = await question_schema(ctx.reader, ctx.scope, ctx.query)
        try:
            plan = parse(ctx.query, schema, datetime.now(UTC))
        except Unparsed:
            plan = None
        if window:  # "what changed / which decisions were added in <window>": the snapshot
            # diff answers, each change with its commit, date and line; "which PRs touched
            # checkout in September" lists the events of the window, by their own dates
            return plan is not None and set(plan.subject.labels) <= DATED_EVENTS
        if plan is not None:
            return (weak or route.intent not in FAMILIES_ANSWER
                    or not _one_hop_about_an_entity(plan, route.intent))
    if window:
        return False
    return weak and mode in ("auto", "model") and role_config(ctx.settings, "cypher").configured


async def plan_with_fallback(ctx: SearchContext, plan: list[str]) -> list[str]:
    if NAME in plan or not await claims(ctx):
        return plan
    return [NAME, *dict.fromkeys([*plan, *HYBRID])]


def _fact(results: dict[str, StrategyResult]) -> dict[str, Any] | None:
    r = results.get(NAME)
    return r.facts[0] if r is not None and r.facts else None


def answer(results: dict[str, StrategyResult], text: str,
           citations: list[Citation]) -> tuple[str, list[Citation]]:
    fact = _fact(results)
    if fact is not None and "rows" not in fact and any(
            a.get("outcome") == "empty" for a in fact.get("attempts") or []):
        # the fallback's answer follows, but what the reading found is an answer too: nothing;
        # when the fallback found no answer either, "nothing" is the answer, not its noise
        # ("which services have no owner?" where every service has one)
        if text.startswith(("No family answered", "No grounded answer")):
            lacking = next((a["lacking"] for a in reversed(fact.get("attempts") or [])
                            if a.get("outcome") == "empty" and a.get("lacking")), None)
            return (every_has(lacking) if lacking else EMPTY_ONLY), []
        return EMPTY_READING + text, citations
    if fact is None or "rows" not in fact:
        return text, citations
    composed, cites = nl_answer.compose(fact)
    empty = assumed.is_empty(str(fact.get("mode")), fact["rows"])
    return assumed.sentence(fact.get("assumptions") or [], empty) + composed, cites


EVERY_HAS = "None: every "


def every_has(lacking: dict[str, Any]) -> str:
    """The empty answer of a listing of what lacks a relationship: none lacks it ("None:
    every Service has an OWNS or PRIMARY_OWNER relationship from a Developer or Team")."""
    label, types = str(lacking["label"]), " or ".join(lacking["types"])
    what = (f"{'an' if types[:1] in tuple('AEIOU') else 'a'} {types} relationship" if types
            else "a relationship")
    if lacking["other"]:
        way = "from" if lacking["direction"] == "in" else "to"
        what += f" {way} a {' or '.join(lacking['other'])}"
    return (f"{EVERY_HAS}{label} has {what} (the question's reading as a graph query returned "
            f"no {label} without one; its Cypher is in route.nl_cypher.attempts).")


def says_nothing_matches(text: str) -> bool:
    """The answer is the reading's empty result (:data:`EMPTY_ONLY` or :func:`every_has`)."""
    return text == EMPTY_ONLY or text.startswith(EVERY_HAS)


def route_fields(results: dict[str, StrategyResult]) -> dict[str, Any]:
    fact = _fact(results)
    if fact is None:
        return {}
    return {"cypher": fact.get("cypher"), "cypher_params": fact.get("params"),
            "translator": fact.get("translator"), "nl_cypher": {
                "attempts": [{k: v for k, v in a.items() if k != "result"}
                             for a in fact["attempts"]],
                "fallback": fact.get("fallback"), "usage": fact["usage"]}}


def empty_confidence(confidence: dict[str, Any], results: dict[str, StrategyResult]
                     ) -> dict[str, Any]:
    """The confidence of :data:`EMPTY_ONLY`: a negative answer from the translator's reading
    (its prior times :data:`assumptions.EMPTY`), never the 0 of an answer with no citation."""
    fact = _fact(results) or {}
    empty = [a for a in fact.get("attempts") or [] if a.get("outcome") == "empty"]
    translator = str(empty[-1].get("translator") if empty else fact.get("translator") or "")
    score = assumed.PRIOR.get(translator, assumed.PRIOR["model"]) * assumed.EMPTY
    return {**confidence, "evidence_confidence": confidence["confidence"],
            "confidence": round(score, 3), "low_confidence_warning": True,
            "low_confidence_reason": "NL→Cypher fell back to hybrid retrieval: "
                                     + str(fact.get("fallback") or "the translated query "
                                           "returned no rows")
                                     + "; nothing else answered (a connector may have "
                                       "missed a convention)"}


def flag(confidence: dict[str, Any], results: dict[str, StrategyResult]) -> dict[str, Any]:
    fact = _fact(results)
    if fact is not None and fact.get("fallback"):
        return {**confidence, "low_confidence_warning": True,
                "low_confidence_reason": "NL→Cypher fell back to hybrid retrieval: "
                                         + str(fact["fallback"])}
    if fact is None or "confidence" not in fact:
        return confidence
    score = float(fact["confidence"])  # the answer's, not the edges' (kept as evidence_)
    out = {**confidence, "evidence_confidence": confidence["confidence"], "confidence": score,
           "assumptions": list(fact.get("assumptions") or [])}
    if score < assumed.HIGH:
        reasons = out["assumptions"] or ["the translated query matched nothing"]
        out |= {"low_confidence_warning": True,
                "low_confidence_reason": "NL→Cypher answer rests on assumptions: "
                                         + "; ".join(reasons)}
    return out
