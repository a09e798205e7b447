"""The embedded zero-LLM translator: question → :class:`Plan` (→ Cypher in ``emit``).

Tagged words (``tagger``) are parsed with a small lark grammar (``grammar.lark``); the tree is
read into a :class:`Plan` whose relation phrases are typed against the live schema (which
``(start label, type, end label)`` triples exist): "belongs to" is OWNS for a service and a
team, MEMBER_OF for a developer and a team. The first reading that parses and type-checks
wins; when none does, :class:`Unparsed` says why and the router falls back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import LarkError
from lark.lexer import Lexer

from substrate.retrieval.nl_cypher.assumptions import Normalised, assumed
from substrate.retrieval.nl_cypher.lexicon import Lexicon, Sense, list_properties
from substrate.retrieval.nl_cypher.plan import Cond, Node, Plan
from substrate.retrieval.nl_cypher.tagger import Tagged, Unparsed, readings, tag
from substrate.retrieval.nl_cypher.timewin import Window

ANY = "Entity"
Triples = frozenset[tuple[str, str, str]]


class _Tokens(Lexer):
    def __init__(self, conf: Any) -> None:
        pass

    def lex(self, data: Any) -> Any:  # type: ignore[override]  # a token list, not text
        for t in data:
            yield Token(t.kind, t)


@lru_cache(maxsize=1)
def grammar() -> Lark:
    text = (Path(__file__).parent / "grammar.lark").read_text()
    return Lark(text, parser="earley", lexer=_Tokens, ambiguity="resolve")


@dataclass(frozen=True)
class Schema:
    """What the translator knows of one tenant's graph."""

    triples: Triples
    entities: Mapping[tuple[str, ...], list[tuple[str, str]]] = field(default_factory=dict)
    normalised: Normalised = None  # values stored normalised from other text (assumptions)
    names_capped: bool = False  # the view has more names than ``entities`` holds
    lexicon: Lexicon | None = None  # the base lexicon with the view's stated values (None: base)


def _val(x: Any) -> Tagged:
    value = x.value if isinstance(x, Token) else x
    assert isinstance(value, Tagged)
    return value


def flip(direction: str) -> str:
    return "in" if direction == "out" else "out"


def _fits(labels: tuple[str, ...], label: str) -> bool:
    return ANY in labels or label in labels


class Builder:
    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.params: dict[str, Any] = {}
        self.n_vars = 0

    def param(self, value: Any) -> str:
        name = f"p{len(self.params)}"
        self.params[name] = value
        return name

    def var(self) -> str:
        self.n_vars += 1
        return f"m{self.n_vars}"

    # --- relation typing ---------------------------------------------------------------
    def connect(self, tok: Tagged, node: Node, other: Node,
                direction: str | Callable[[Sense], str] | None = None,
                **extra: Any) -> Cond:
        """A relationship condition from ``node`` to ``other`` for the first sense of ``tok``
        that the schema allows; the node labels narrow to the ones that fit."""
        for sense in tok.value:
            assert isinstance(sense, Sense)
            d = direction(sense) if callable(direction) else (direction or sense.direction)
            types = sense.types_for(other.labels)
            fits = [(s, t, e) for (s, t, e) in self.schema.triples if t in types
                    and _fits(node.labels if d == "out" else other.labels, s)
                    and _fits(other.labels if d == "out" else node.labels, e)]
            if fits:
                node.labels = _narrow(node.labels, {s if d == "out" else e for s, _, e in fits})
                other.labels = _narrow(other.labels, {e if d == "out" else s for s, _, e in fits})
                used = tuple(t for t in types if any(f[1] == t for f in fits))
                return Cond("rel", types=used, direction=d, other=other, **extra)
        raise Unparsed(f"'{tok.text}' does not connect {'/'.join(node.labels)} and "
                       f"{'/'.join(other.labels)} in this graph")

    # --- noun phrases ------------------------------------------------------------------
    def np(self, tree: Tree[Any], var: str | None = None) -> Node:
        node = Node(var or self.var(), (ANY,))
        for child in tree.children:
            if child.data == "head":
                self.head(node, _val(child.children[0]))
        for child in tree.children:
            if child.data == "state":
                self.state(node, _val(child.children[0]), negated=False)
            elif child.data != "head":
                self.filter(node, child)
        return node

    def head(self, node: Node, tok: Tagged) -> None:
        if tok.kind == "LABEL":
            node.labels = (tok.value,)
            return
        label, key, value = tok.value[0]
        node.labels = (label,)
        many = isinstance(value, tuple)  # "datastores": any of several kinds
        node.conds.append(Cond("prop", key=key, op="IN" if many else "",
                               param=self.param(list(value) if many else value)))

    def state(self, node: Node, tok: Tagged, negated: bool) -> None:
        for label, key, value, relation, direction in tok.value:
            if not _fits(node.labels, label):
                continue
            node.labels = (label,)
            if key:
                if negated:
                    raise Unparsed(f"'not {tok.text}' is not supported")
                many = isinstance(value, tuple)  # several stored values ("Python/Locust")
                op = ("HAS_ANY" if many else "HAS") if key in list_properties() else \
                    ("IN" if many else "")  # a member of a list property ("in compose")
                node.conds.append(Cond("prop", key=key, op=op,
                                       param=self.param(list(value) if many else value)))
            else:
                other = Node(self.var(), (label,))
                node.conds.append(Cond("rel", types=(relation,), direction=direction,
                                       other=other, negated=negated))
            return
        raise Unparsed(f"'{tok.text}' does not describe {'/'.join(node.labels)}")

    def entity(self, tree: Tree[Any]) -> Node:
        toks = [_val(c) for c in tree.children]  # [LABEL] ENT, or ENT LABEL
        ent: Tagged = next(t for t in toks if t.kind == "ENT")
        label = next((t.value for t in toks if t.kind == "LABEL"), None)
        choices = [(c, lb) for c, lb in ent.value if label is None or lb == label]
        if not choices:
            raise Unparsed(f"'{ent.text}' is not a {label}")
        if len(choices) > 1:
            services = [x for x in choices if x[1] == "Service"]
            if len(services) != 1:
                raise Unparsed(f"'{ent.text}' is ambiguous: " + ", ".join(c for c, _ in choices))
            choices = services
        ceid, lb = choices[0]
        return Node(self.var(), (lb,), [Cond("ceid", param=self.param(ceid))])

    def target(self, tree: Tree[Any]) -> Node:
        inner = tree.children[0]
        return self.entity(inner) if inner.data == "target_ent" else self.np(inner)

    # --- filters -----------------------------------------------------------------------
    def filter(self, node: Node, tree: Tree[Any]) -> None:
        kids = [c for c in tree.children if not (isinstance(c, Token) and c.type == "THAT")]
        toks = {c.type: c.value for c in kids if isinstance(c, Token)}
        subs = [c for c in kids if isinstance(c, Tree)]
        rule = tree.data
        if rule == "f_and":
            self.filter(node, subs[0])
        elif rule == "f_rel":
            node.conds.append(self.connect(toks["REL"], node, self.target(subs[0])))
        elif rule == "f_not_rel":
            other = (self.target(subs[0]) if subs and subs[0].data == "target"
                     else self.np(subs[0]) if subs else Node(self.var(), (ANY,)))
            node.conds.append(self.connect(toks["REL"], node, other, negated=True))
        elif rule == "f_no_noun":
            node.conds.append(self.connect(toks["RNOUN"], node, Node(self.var(), (ANY,)),
                                           negated=True))
        elif rule == "f_cmp_noun":
            cond = self.connect(toks["RNOUN"], node, Node(self.var(), (ANY,)))
            node.conds.append(self.counted(cond, toks["CMP"].value, toks["NUM"].value))
        elif rule == "f_cmp_rel":
            cond = self.connect(toks["REL"], node, self.np(subs[0]))
            node.conds.append(self.counted(cond, toks["CMP"].value, toks["NUM"].value))
        elif rule in ("f_state", "f_not_state"):
            self.state(node, toks["STATE"], negated=rule == "f_not_state")
        elif rule == "f_time":
            self.time(node, toks["TIME"].value)

    def counted(self, cond: Cond, op: str, number: int) -> Cond:
        cond.kind, cond.op, cond.param = "count", op, self.param(number)
        return cond

    def time(self, node: Node, window: Window) -> None:
        """A window applies to the relationship just named ("superseded in September"), else
        to the node's own date. An event's own date is when it happened ("which PRs touched
        checkout in September": merged then), whatever relationship the question names: a
        PR's CHANGES edge was loaded with the PR, whenever that was."""
        since = self.param(window.start.isoformat()) if window.start else ""
        until = self.param(window.end.isoformat()) if window.end else ""
        last = node.conds[-1] if node.conds else None
        event = bool(node.labels) and set(node.labels) <= DATED_EVENTS
        if (last is not None and last.kind == "rel" and not last.negated and not last.since
                and not event):
            last.since, last.until = since, until
            return
        if since:
            self.params[since] = window.start.date().isoformat() if window.start else None
        if until:
            self.params[until] = window.end.date().isoformat() if window.end else None
        node.conds.append(Cond("date", since=since, until=until))


def _narrow(labels: tuple[str, ...], allowed: set[str]) -> tuple[str, ...]:
    if ANY in labels:
        return tuple(sorted(allowed)) if len(allowed) <= 3 else labels
    return tuple(lb for lb in labels if lb in allowed) or labels


_WHO = ("Team", "Developer")
DATED_EVENTS = frozenset({"PullRequest", "FailurePattern"})


def build(tree: Tree[Any], schema: Schema) -> Plan:
    b = Builder(schema)
    rule = tree.data
    kids = tree.children
    toks = [c.value for c in kids if isinstance(c, Token)]
    subs = [c for c in kids if isinstance(c, Tree)]
    by_kind = {t.kind: t for t in toks}

    def plan(mode: str, subject: Node, **kw: Any) -> Plan:
        return Plan(mode, subject, params=b.params, shape=str(rule), **kw)

    if rule in ("count", "listing"):
        return plan("count" if rule == "count" else "list", b.np(subs[0], "n"))
    if rule in ("listing_objects", "count_objects", "objects"):
        subject = b.np(subs[0], "n") if rule != "objects" else Node("n", (ANY,))
        at = next(i for i, s in enumerate(subs) if s.data == "target_ent")
        subject.conds.append(b.connect(by_kind["REL"], subject, b.entity(subs[at]),
                                       direction=lambda s: flip(s.direction)))
        for trailing in subs[at + 1:]:  # "... does frontend call that are written in Go"
            b.filter(subject, trailing)
        return plan("count" if rule == "count_objects" else "list", subject)
    if rule in ("who", "subjects"):
        subject = Node("n", _WHO if rule == "who" else (ANY,))
        subject.conds.append(b.connect(by_kind["REL"], subject, b.target(subs[0])))
        return plan("list", subject)
    if rule in ("noun_of", "count_noun_of"):
        subject = Node("n", (ANY,))
        subject.conds.append(b.connect(by_kind["RNOUN"], subject, b.entity(subs[-1]),
                                       direction=lambda s: flip(s.direction)))
        return plan("count" if rule == "count_noun_of" else "list", subject)
    ranked: Plan = _ranking(b, rule, toks, subs, by_kind, plan)
    return ranked


def _ranking(b: Builder, rule: str, toks: list[Tagged], subs: list[Tree[Any]],
             by_kind: dict[str, Tagged], plan: Any) -> Plan:
    sup = _val(next(s for s in subs if s.data == "sup").children[0])
    nps = [s for s in subs if s.data == "np"]
    order = "ASC" if sup.kind == "LEAST" else "DESC"
    limit = ""
    for s in subs:
        if s.data == "top":
            nums = [_val(c).value for c in s.children if isinstance(c, Token) and c.type == "NUM"]
            limit = b.param(nums[0] if nums else 1)
    if rule == "rank_who":
        subject, other, key = Node("n", _WHO), b.np(nps[0]), "REL"
    elif rule == "rank_rel":
        subject, other, key = b.np(nps[0], "n"), b.np(nps[1]), "REL"
    else:
        subject = b.np(nps[0], "n")
        other, key = Node(b.var(), (ANY,)), "INADJ" if rule.startswith("rank_adj") else "RNOUN"
    rank = b.connect(by_kind[key], subject, other)
    result: Plan = plan("rank", subject, rank=rank, order=order, limit_param=limit)
    return result


def parse(question: str, schema: Schema, now: datetime | None = None) -> Plan:
    """The first reading of ``question`` that parses and type-checks; :class:`Unparsed`
    otherwise (with the reason of the most promising failure)."""
    slots, _ = tag(question, schema.entities, now or datetime.now(UTC), schema.lexicon)
    if not slots:
        raise Unparsed("empty question")
    reason = "no reading of the question fits the grammar"
    for tokens in readings(slots):
        try:
            tree = grammar().parse(tokens)  # type: ignore[arg-type,unused-ignore]
        except LarkError:
            continue
        try:
            plan = build(tree, schema)
        except Unparsed as exc:
            reason = str(exc)
            continue
        plan.assumptions = assumed(slots, tokens, schema.normalised)
        return plan
    raise Unparsed(reason)
