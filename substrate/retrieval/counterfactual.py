"""CounterfactualEngine (graphrag-orchestrator-architecture.md): how far an answer depends on
each piece of its evidence.

Deterministic, with no model: the composed answer is recomputed from the same retrieved facts
with some evidence taken away, and answers are compared by the set of entities they state
(every entity the answer's citations name, the question's own entities excepted). A fact
survives a removal when every hop it rests on survives (a dependency path needs all its
edges; an owner needs one of its claims).

* evidence removal — each cited evidence item dropped in turn: does the answer change, what
  it loses or gains;
* sensitivity — the evidence ranked by how much of the answer its removal changes;
* minimum flipping change — the smallest set of cited evidence whose removal changes the
  answer (sizes 1, 2, … within the budget);
* relationship modification — "what if this edge did not exist" (``remove_edges``), "what if
  it pointed elsewhere" (``redirect``), "what if this entity went down" (``remove_nodes``:
  every edge touching it is gone);
* temporal shift — done by the caller (it re-runs retrieval pinned to an earlier snapshot)
  and compared here with :func:`compare`;
* robustness — the share of single removals that leave the answer unchanged, in the
  confidence block.

Cost is bounded: every recomputation counts against ``budget``; when it runs out the report
says ``truncated``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from substrate.errors import BadRequest
from substrate.retrieval.context import Hit, StrategyResult

Compose = Callable[[str, dict[str, StrategyResult], list[Hit]], tuple[str, list[dict[str, Any]]]]
EDGE = re.compile(r"^(?P<src>[^\s\[\]]+)-\[(?P<type>[A-Z_]+)\]->(?P<dst>[^\s\[\]]+)$")
DEFAULT_BUDGET = 32
MAX_BUDGET = 256
MAX_FLIP_SIZE = 3


@dataclass(frozen=True)
class Scenario:
    """What to take away or change; empty means "nothing"."""

    refs: frozenset[str] = frozenset()
    edges: frozenset[tuple[str, str, str]] = frozenset()  # (from, type, to)
    nodes: frozenset[str] = frozenset()
    redirect: tuple[tuple[tuple[str, str, str], str], ...] = ()  # (edge, new target)

    def apply(self, hop: dict[str, Any]) -> dict[str, Any] | None:
        key = (hop.get("from"), hop.get("type"), hop.get("to"))
        if (str(hop.get("evidence_ref") or "") in self.refs or key in self.edges
                or hop.get("from") in self.nodes or hop.get("to") in self.nodes):
            return None
        for edge, target in self.redirect:
            if key == edge:
                return {**hop, "to": target}
        return hop


@dataclass
class Options:
    budget: int = DEFAULT_BUDGET
    remove_edges: list[tuple[str, str, str]] = field(default_factory=list)
    remove_nodes: list[str] = field(default_factory=list)
    redirect: list[tuple[tuple[str, str, str], str]] = field(default_factory=list)
    shift_to: dict[str, Any] | None = None  # {"snapshot_version": n} or {"at": iso}

    @classmethod
    def parse(cls, value: Any) -> Options | None:
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if not isinstance(value, dict):
            raise BadRequest("counterfactual must be true or an object")
        known = {"budget", "remove_edges", "remove_nodes", "redirect", "shift_to"}
        unknown = set(value) - known
        if unknown:
            raise BadRequest("unknown counterfactual options",
                             {"unknown": sorted(unknown), "known": sorted(known)})
        budget = value.get("budget", DEFAULT_BUDGET)
        if isinstance(budget, bool) or not isinstance(budget, int) \
                or not 1 <= budget <= MAX_BUDGET:
            raise BadRequest(f"counterfactual.budget must be 1..{MAX_BUDGET}")
        redirect = []
        for item in _list(value, "redirect"):
            if not isinstance(item, dict) or not isinstance(item.get("to"), str):
                raise BadRequest("counterfactual.redirect items are {edge, to}")
            redirect.append((_edge(item.get("edge")), item["to"]))
        shift = value.get("shift_to")
        if shift is not None and (not isinstance(shift, dict)
                                  or set(shift) - {"snapshot_version", "at"} or len(shift) != 1):
            raise BadRequest("counterfactual.shift_to is {snapshot_version: n} or {at: iso}")
        nodes = _list(value, "remove_nodes")
        if not all(isinstance(n, str) for n in nodes):
            raise BadRequest("counterfactual.remove_nodes are entity ids")
        return cls(budget, [_edge(e) for e in _list(value, "remove_edges")], list(nodes),
                   redirect, shift)


def _list(value: dict[str, Any], key: str) -> list[Any]:
    items = value.get(key, [])
    if not isinstance(items, list) or len(items) > 20:
        raise BadRequest(f"counterfactual.{key} must be a list of at most 20")
    return items


def _edge(text: Any) -> tuple[str, str, str]:
    m = EDGE.match(text.strip()) if isinstance(text, str) else None
    if m is None:
        raise BadRequest("an edge is written src-[TYPE]->dst", {"edge": text})
    return (m["src"], m["type"], m["dst"])


def _facts(facts: Iterable[dict[str, Any]], scenario: Scenario) -> list[dict[str, Any]]:
    out = []
    for fact in facts:
        if isinstance(fact.get("hops"), list):  # a path: every hop must survive
            applied = [scenario.apply(h) for h in fact["hops"]]
            hops = [h for h in applied if h is not None]
            if len(hops) == len(applied):
                old_end = fact["hops"][-1].get("to") if fact["hops"] else None
                new_target = hops[-1]["to"] if hops else None
                target = fact.get("target")
                if (isinstance(target, dict) and old_end == target.get("ceid")
                        and new_target != old_end):  # a redirected dependency path
                    target = {"ceid": new_target, "name": str(new_target).split(":", 1)[-1],
                              "label": target.get("label")}
                out.append({**fact, "hops": hops, "target": target})
        elif isinstance(fact.get("owners"), list):  # an owner needs one surviving claim
            owners = []
            for owner in fact["owners"]:
                claims = [c for c in (scenario.apply(c) for c in owner["claims"]) if c]
                if claims:
                    owners.append({**owner, "claims": claims})
            if owners:
                out.append({**fact, "owners": owners})
        elif isinstance(fact.get("hop"), dict):
            hop = scenario.apply(fact["hop"])
            if hop is not None:
                out.append({**fact, "hop": hop})
        else:
            out.append(fact)
    return out


def apply(results: dict[str, StrategyResult], scenario: Scenario
          ) -> dict[str, StrategyResult]:
    return {name: replace(r, hops=[h for h in (scenario.apply(h) for h in r.hops) if h],
                          facts=_facts(r.facts, scenario))
            for name, r in results.items()}


def answer_entities(citations: list[dict[str, Any]], seeds: Iterable[str]) -> frozenset[str]:
    own = set(seeds)
    return frozenset(x for c in citations for x in (c.get("from"), c.get("to"))
                     if x and x not in own)


@dataclass(frozen=True)
class Outcome:
    text: str
    entities: frozenset[str]


def compare(base: Outcome, other: Outcome) -> dict[str, Any]:
    return {"changed": base.entities != other.entities,
            "lost": sorted(base.entities - other.entities),
            "gained": sorted(other.entities - base.entities), "answer": other.text}


class Engine:
    """Recomputes one composed answer under scenarios, within a budget."""

    def __init__(self, compose: Compose, intent: str, results: dict[str, StrategyResult],
                 fused: list[Hit], seeds: Iterable[str], budget: int) -> None:
        self.compose, self.intent, self.results, self.fused = compose, intent, results, fused
        self.seeds = frozenset(seeds)
        self.budget = budget
        self.used = 0
        self.truncated = False
        text, citations = compose(intent, results, fused)
        self.base = Outcome(text, answer_entities(citations, self.seeds))
        self.citations = citations

    def run(self, scenario: Scenario) -> Outcome | None:
        if self.used >= self.budget:
            self.truncated = True
            return None
        self.used += 1
        text, citations = self.compose(self.intent, apply(self.results, scenario), self.fused)
        return Outcome(text, answer_entities(citations, self.seeds))

    def evidence(self) -> list[str]:
        return list(dict.fromkeys(str(c["evidence_ref"]) for c in self.citations
                                  if c.get("evidence_ref")))

    def removals(self) -> list[dict[str, Any]]:
        out = []
        for ref in self.evidence():
            outcome = self.run(Scenario(refs=frozenset({ref})))
            if outcome is None:
                break
            delta = compare(self.base, outcome)
            size = len(self.base.entities) or 1
            out.append({"evidence_ref": ref, **delta,
                        "sensitivity": round((len(delta["lost"]) + len(delta["gained"]))
                                             / size, 4)})
        return out

    def minimum_flip(self, singles: list[dict[str, Any]]) -> dict[str, Any] | None:
        flips = [s["evidence_ref"] for s in singles if s["changed"]]
        if flips:
            return {"evidence_refs": [flips[0]], "size": 1, "alternatives": len(flips) - 1}
        refs = self.evidence()
        for size in range(2, min(MAX_FLIP_SIZE, len(refs)) + 1):
            for combo in itertools.combinations(refs, size):
                outcome = self.run(Scenario(refs=frozenset(combo)))
                if outcome is None:
                    return None
                if outcome.entities != self.base.entities:
                    return {"evidence_refs": list(combo), "size": size,
                            **compare(self.base, outcome)}
        return None


def analyse(engine: Engine, options: Options) -> dict[str, Any]:
    """The counterfactual report of one answer (temporal shift added by the caller)."""
    singles = engine.removals()
    flip = engine.minimum_flip(singles)
    modifications = []
    for edge in options.remove_edges:
        outcome = engine.run(Scenario(edges=frozenset({edge})))
        if outcome is not None:
            modifications.append({"remove_edge": "{}-[{}]->{}".format(*edge),
                                  **compare(engine.base, outcome)})
    for node in options.remove_nodes:
        outcome = engine.run(Scenario(nodes=frozenset({node})))
        if outcome is not None:
            modifications.append({"remove_node": node, **compare(engine.base, outcome)})
    for edge, target in options.redirect:
        outcome = engine.run(Scenario(redirect=((edge, target),)))
        if outcome is not None:
            modifications.append({"redirect": "{}-[{}]->{}".format(*edge), "to": target,
                                  **compare(engine.base, outcome)})
    unchanged = [s for s in singles if not s["changed"]]
    robustness = round(len(unchanged) / len(singles), 4) if singles else None
    return {
        "answer_entities": sorted(engine.base.entities),
        "evidence_removal": singles,
        "sensitivity": [{"evidence_ref": s["evidence_ref"], "sensitivity": s["sensitivity"]}
                        for s in sorted(singles, key=lambda s: (-s["sensitivity"],
                                                                s["evidence_ref"]))],
        "minimum_flipping_change": flip,
        "modifications": modifications,
        "robustness": robustness,
        "recomputations": engine.used, "budget": engine.budget, "truncated": engine.truncated,
    }


async def shifted_scope(ctx: Any, shift_to: dict[str, Any]) -> Any:
    """The caller's scope moved back to an earlier snapshot (same tenant, clearance, policy)."""
    from substrate.retrieval.scope import resolve_scope

    scope = ctx.scope
    earlier = await resolve_scope(ctx.settings, scope.tenant, shift_to.get("snapshot_version"),
                                  shift_to.get("at"), scope.clearance[-1])
    if earlier.version > scope.version:
        raise BadRequest("counterfactual.shift_to must be at or before the answer's snapshot",
                         {"shift_to": shift_to, "snapshot_version": scope.version})
    return replace(scope, version=earlier.version, pinned=True, at=earlier.at,
                   tenant_version=None)
