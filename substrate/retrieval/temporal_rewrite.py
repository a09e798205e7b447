"""Scope rewrite for ``POST /cypher`` (RSN-07, tenant and clearance scoping).

``scope_query`` takes a query that already passed ``cypher_guard.check_read_only`` and rewrites
it so that every node and relationship it matches is visible in the caller's scope: the tenant
``$__tenant``, the clearance levels ``$__clearance`` and the snapshot version ``$__v``. Every
``/cypher`` query is rewritten — tenant scoping happens in the query, never by filtering
results — and a trailing ``AT(timestamp)`` only changes which version ``$__v`` is.

Rules:
* Every ``MATCH`` / ``OPTIONAL MATCH`` clause (also inside ``CALL { }`` subqueries and in every
  part of a ``UNION``) gets a ``WHERE`` conjunction with one predicate per pattern element.
  An existing clause ``WHERE e`` becomes ``WHERE (e) AND <scope>``, so ``OR`` keeps its meaning
  and the predicates stay in the clause (an ``OPTIONAL MATCH`` still yields nulls instead of
  dropping the row). ``USING`` hints stay before the ``WHERE``.
* Anonymous elements are named: ``()`` -> ``(__n0 )``, ``-->`` -> ``-[__r0]->``,
  ``[:T*1..3]`` -> ``[__r1 :T*1..3]``. These names appear in ``RETURN *`` output (drop columns
  starting with ``__``); ``RETURN *`` in a ``UNION`` that needed them is refused.
* Node ``n`` is visible when ``n.tenant_id = $__tenant``, ``coalesce(n.classification,
  'internal') IN $__clearance`` and one of its validity intervals holds ``$__v``
  (``n.iv_from[i] <= $__v < n.iv_to[i]``). Relationship ``r`` is visible when
  ``r.tenant_id = $__tenant`` and ``r.valid_from_v <= $__v`` and (``r.valid_to_v`` is null or
  ``> $__v``). Nodes without ``tenant_id`` (bookkeeping) are never visible.
* A variable-length relationship ``[r*1..3]`` gets ``all(__x IN r WHERE <rel predicate>)`` and
  its path (named ``__p0 = ...`` unless already named) ``all(__y IN nodes(p) WHERE <node
  predicate>)``, so intermediate nodes are scoped too.
* Variables bound by an earlier clause get the predicate again (true, so harmless); inline
  ``WHERE`` in node/relationship patterns and label expressions (``|``, ``&``, ``!``, ``%``,
  ``IS``) are kept as written.

Refused with ``BadRequest`` (400, ``detail.construct`` names it, ``detail.offset`` points at it),
because the rewriter cannot put a scope predicate on what they match — never answered unscoped:
parameters or names starting with ``__`` (reserved); pattern expressions outside ``MATCH``
(pattern predicates ``WHERE (a)-->(b)``, comprehensions ``[(a)-->(b) | b]``); ``EXISTS { }``,
``COUNT { }``, ``COLLECT { }``; ``shortestPath``/``allShortestPaths``, path selectors (``ANY``,
``SHORTEST``, ``ALL``) and match modes; quantified path patterns ``((a)-->(b)){1,3}`` and
quantified relationships ``-->+``; ``CALL`` of any procedure but the schema ones in
``SCOPE_SAFE_PROCEDURES`` (index queries, APOC expansion and GDS streams return elements of every
tenant and version); functions on ``UNSCOPABLE_FUNCTIONS`` (fetch by id, degree, neighbours);
any MATCH text the pattern parser does not recognise. The text is read with comments and string
contents blanked, so ``'MATCH (x)'`` in a literal is inert; Unicode arrow characters
(``–``, ``＞``...) count as ``-``/``>``. Fail-closed false positives: an expression such as
``(x)--1`` looks like a pattern and is refused; write ``(x) - (-1)``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from substrate.cypher import macro
from substrate.errors import BadRequest
from substrate.retrieval.cypher_guard import _matches, blank, mask

RESERVED_PARAMETERS = ("__v", "__tenant", "__clearance")
SCOPE_SAFE_PROCEDURES: tuple[str, ...] = (
    "db.labels", "db.relationshiptypes", "db.propertykeys", "db.ping", "db.info",
    "db.schema.visualization", "db.schema.nodetypeproperties", "db.schema.reltypeproperties",
)
UNSCOPABLE_FUNCTIONS: tuple[str, ...] = (
    "gds.util.asnode*", "gds.util.nodeproperty", "gds.alpha.linkprediction.*",
    "apoc.node.*", "apoc.nodes.*", "*.rebind", "apoc.trigger.*", "apoc.meta.nodes.*",
    "apoc.hashing.fingerprintgraph", "apoc.cypher.*", "graph.by*",
)
_CLAUSES = frozenset({"MATCH", "OPTIONAL", "WITH", "RETURN", "UNWIND", "CALL", "UNION",
                      "FINISH", "ORDER", "SKIP", "LIMIT", "OFFSET", "YIELD"})
_SELECTORS = {"ANY": "path selector", "ALL": "path selector", "SHORTEST": "path selector",
              "REPEATABLE": "match mode", "DIFFERENT": "match mode"}
# Cypher also reads these as the line and heads of an arrow: ``(a)–[r]–＞(b)`` is a pattern.
_ARROWS = str.maketrans({**dict.fromkeys("\u00ad\u2010\u2011\u2012\u2013\u2014\u2015\u2212"
                                         "\ufe58\ufe63\uff0d", "-"),
                         **dict.fromkeys("\u27e8\u3008\ufe64\uff1c", "<"),
                         **dict.fromkeys("\u27e9\u3009\ufe65\uff1e", ">")})
_IDENT = re.compile(r"\s*([A-Za-z_]\w*)")
_REL_IN_EXPR = re.compile(r"\)\s*<?\s*-\s*[-\[]")
_SUBQUERY_EXPR = re.compile(r"(?<![\w.$])(EXISTS|COUNT|COLLECT)\s*\{", re.I)
_SHORTEST = re.compile(r"(?<![\w.$])(allShortestPaths|shortestPath)\s*\(", re.I)
_RESERVED = re.compile(r"(?<![\w.])\$?__\w*")
_INVOCATION = re.compile(r"(?<![\w.$])([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)+)\s*\(")
_WHERE = re.compile(r"(?<![\w.$])WHERE\b", re.I)
_RETURN_STAR = re.compile(r"(?<![\w.$])RETURN\s+(?:DISTINCT\s+)?\*", re.I)


def node_predicate(n: str) -> str:
    """Node ``n`` visible at ``$__v`` for ``$__tenant``/``$__clearance`` (cypher/_macros.j2)."""
    return macro("node_at", n, "__")


def rel_predicate(r: str) -> str:
    """Relationship ``r`` visible at ``$__v`` for ``$__tenant`` (cypher/_macros.j2)."""
    return macro("rel_at", r, "__")


def scope_parameters(tenant: str, version: int, clearance: Sequence[str]) -> dict[str, Any]:
    """The reserved parameters a rewritten query needs (merge them last, over user params)."""
    return {"__tenant": tenant, "__v": version, "__clearance": list(clearance)}


def _refuse(construct: str, offset: int, reason: str) -> BadRequest:
    return BadRequest(f"the AT/scope rewriter cannot handle {construct}: {reason}",
                      detail={"construct": construct, "offset": offset, "reason": reason})


def _structure(query: str) -> str:
    """Same-length text for parsing: comments and string contents blanked, quoted names
    replaced by ``x``s (so brackets inside them do not count), arrow characters in ASCII."""
    return blank(query, _opaque_name).translate(_ARROWS)


def _opaque_name(query: str, start: int, end: int) -> str:
    if query.startswith("__", start + 1) and query[start - 1: start] != ".":
        raise _refuse("reserved name", start, "names starting with `__` are reserved")
    return "x" * (end - start)


@dataclass(frozen=True)
class _Word:
    upper: str
    start: int
    end: int
    keyword: bool  # could be a clause keyword (not a property, label, parameter or map key)


def _depths(s: str) -> list[int]:
    """``d[i]``: bracket depth before character ``i`` (``()``, ``[]`` and ``{}`` alike)."""
    d = [0] * (len(s) + 1)
    for i, c in enumerate(s):
        d[i + 1] = d[i] + (c in "([{") - (c in ")]}")
    return d


def _words(s: str) -> list[_Word]:
    words = []
    for m in re.finditer(r"(?<![\w.$])[A-Za-z_]\w*", s):
        j = m.start() - 1
        while j >= 0 and s[j].isspace():
            j -= 1
        before = s[j] if j >= 0 else ""
        after = s[m.end():].lstrip()[:1]
        keyword = before not in (":", "|", "&", "!", "%") and after != ":"
        words.append(_Word(m.group(0).upper(), m.start(), m.end(), keyword))
    return words


def _closing(s: str, d: list[int], i: int) -> int:
    """Index of the bracket closing the one opening at ``i``."""
    for j in range(i + 1, len(s)):
        if d[j + 1] == d[i]:
            return j
    raise _refuse("unbalanced brackets", i, "no closing bracket")


@dataclass
class _Scope:
    """Insertions (position, text) and the counter for generated names, for one query."""

    edits: list[tuple[int, str]] = field(default_factory=list)
    counter: int = 0

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"__{prefix}{self.counter - 1}"


class _Pattern:
    """Parses one MATCH pattern ``s[i:end]``; collects the predicates its elements need."""

    def __init__(self, query: str, s: str, d: list[int], scope: _Scope) -> None:
        self.q, self.s, self.d, self.scope = query, s, d, scope
        self.preds: dict[str, str] = {}
        self.i = self.end = 0

    def _ws(self) -> str:
        while self.i < self.end and self.s[self.i].isspace():
            self.i += 1
        return self.s[self.i] if self.i < self.end else ""

    def parse(self, start: int, end: int) -> list[str]:
        self.i, self.end = start, end
        while True:
            self._part()
            if self._ws() != ",":
                break
            self.i += 1
        if self._ws() == "(":
            raise _refuse("quantified path pattern", self.i, "quantifiers are not scoped")
        if self._ws():
            raise _refuse("unsupported pattern syntax", self.i, "unexpected text in MATCH")
        return list(self.preds.values())

    def _part(self) -> None:
        self._ws()
        part_start, path = self.i, None
        m = _IDENT.match(self.s, self.i, self.end)
        if m and re.match(r"\s*=", self.s[m.end(): self.end]):
            path = self.q[m.start(1): m.end(1)]
            self.i = self.s.index("=", m.end()) + 1
            self._ws()
        self._node()
        varlength = False
        while self._ws() in ("-", "<"):
            varlength |= self._rel()
            self._node()
        if varlength:
            if path is None:
                path = self.scope.name("p")
                self.scope.edits.append((part_start, f"{path} = "))
            self.preds[f"nodes({path})"] = (
                f"all(__y IN nodes({path}) WHERE {node_predicate('__y')})")

    def _element_var(self, open_at: int, close_at: int, prefix: str) -> str:
        content = self.s[open_at + 1: close_at]
        if _REL_IN_EXPR.search(content) or content.lstrip().startswith("("):
            raise _refuse("quantified or nested path pattern", open_at,
                          "parenthesised path patterns and pattern predicates are not scoped")
        m = _IDENT.match(content)
        if m and not (m.group(1).upper() in ("IS", "WHERE")
                      and re.match(r"\s*[\w(!%`]", content[m.end():])):
            return self.q[open_at + 1 + m.start(1): open_at + 1 + m.end(1)]
        var = self.scope.name(prefix)
        self.scope.edits.append((open_at + 1, f"{var} "))
        return var

    def _node(self) -> None:
        c = self._ws()
        if c != "(":
            m = _IDENT.match(self.s, self.i, self.end)
            word = m.group(1).upper() if m else (c or "end of pattern")
            construct = _SELECTORS.get(word, "unsupported pattern syntax")
            raise _refuse(construct, self.i, f"expected a node pattern, found `{word}`")
        close = _closing(self.s, self.d, self.i)
        var = self._element_var(self.i, close, "n")
        self.preds.setdefault(var, node_predicate(var))
        self.i = close + 1
        self._no_quantifier()

    def _no_quantifier(self) -> None:
        if self._ws() in ("{", "+", "*"):
            raise _refuse("quantified path pattern", self.i, "quantifiers are not scoped")

    def _rel(self) -> bool:
        if self._ws() == "<":
            self.i += 1
        if self._ws() != "-":
            raise _refuse("unsupported pattern syntax", self.i, "expected a relationship")
        first_dash = self.i
        self.i += 1
        varlength = False
        if self._ws() == "[":
            close = _closing(self.s, self.d, self.i)
            var = self._element_var(self.i, close, "r")
            varlength = self._is_varlength(self.i, close)
            pred = (f"all(__x IN {var} WHERE {rel_predicate('__x')})" if varlength
                    else rel_predicate(var))
            self.preds.setdefault(var, pred)
            self.i = close + 1
        else:
            var = self.scope.name("r")
            self.scope.edits.append((first_dash + 1, f"[{var}]"))
            self.preds[var] = rel_predicate(var)
        if self._ws() != "-":
            raise _refuse("unsupported pattern syntax", self.i, "expected `-`")
        self.i += 1
        if self._ws() == ">":
            self.i += 1
        self._no_quantifier()
        return varlength

    def _is_varlength(self, open_at: int, close_at: int) -> bool:
        inner = self.d[open_at + 1]
        for j in range(open_at + 1, close_at):
            if self.d[j] == inner and _WHERE.match(self.s, j):
                return False
            if self.s[j] == "*" and self.d[j] == inner:
                return True
        return False


@dataclass(frozen=True)
class _Clause:
    start: int  # just after MATCH
    pattern_end: int
    where: _Word | None
    end: int  # the next clause keyword, the closing bracket, or the end of the text


def _clause(s: str, d: list[int], words: list[_Word], k: int) -> _Clause:
    """The MATCH clause whose keyword is ``words[k]``."""
    match = words[k]
    depth = d[match.start]
    end = next((j for j in range(match.end, len(s)) if s[j] in ")]}" and d[j] == depth),
               len(s))
    where: _Word | None = None
    pattern_end = end
    for prev, w in zip(words[k:], words[k + 1:], strict=False):
        if w.start >= end:
            break
        if d[w.start] != depth or not w.keyword:
            continue
        if w.upper in _CLAUSES and not (w.upper == "WITH" and prev.upper in ("STARTS", "ENDS")):
            end = w.start
            break
        if w.upper in ("WHERE", "USING") and pattern_end == end:
            pattern_end = w.start
        if w.upper == "WHERE" and where is None:
            where = w
    return _Clause(match.end, min(pattern_end, end), where, end)


def _scope_match(query: str, s: str, d: list[int], clause: _Clause, scope: _Scope) -> None:
    preds = _Pattern(query, s, d, scope).parse(clause.start, clause.pattern_end)
    conjunction = " AND ".join(preds)
    tail = len(s[: clause.end].rstrip())
    if clause.where is None:
        scope.edits.append((tail, f" WHERE {conjunction}"))
    else:
        head = clause.where.end
        while head < tail and s[head].isspace():
            head += 1
        scope.edits.append((head, "("))
        scope.edits.append((tail, f") AND {conjunction}"))


def _check_routines(names: str, words: list[_Word]) -> None:
    """``names``: the text with back-ticked names un-quoted (``cypher_guard.mask``)."""
    for w in words:
        if w.upper != "CALL" or not w.keyword:
            continue
        rest = names[w.end:].lstrip()
        if rest.startswith(("{", "(")):
            continue  # a subquery; its MATCH clauses are scoped like any other
        m = re.match(r"[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*", rest)
        name = re.sub(r"\s+", "", m.group(0)) if m else rest[:20]
        if name.lower() not in SCOPE_SAFE_PROCEDURES:
            raise _refuse(f"procedure {name}", w.start,
                          "its results cannot be restricted to the tenant, clearance and "
                          "snapshot; only schema procedures are allowed in scoped queries")
    for m in _INVOCATION.finditer(names):
        name = re.sub(r"\s+", "", m.group(1))
        if _matches(name, UNSCOPABLE_FUNCTIONS):
            raise _refuse(f"function {name}", m.start(),
                          "it reads graph elements outside the matched pattern")


def _check_expressions(s: str) -> None:
    """Refusals that need only the text (before any pattern is parsed)."""
    if m := _RESERVED.search(s):
        raise _refuse("reserved name", m.start(),
                      f"`{m.group(0)}`: parameters and names starting with `__` are reserved")
    if m := _SUBQUERY_EXPR.search(s):
        raise _refuse(f"{m.group(1).upper()} {{ }} subquery", m.start(),
                      "patterns in subquery expressions are not scoped")
    if m := _SHORTEST.search(s):
        raise _refuse(m.group(1), m.start(), "shortest-path search is not scoped")


def _check_leftover_patterns(s: str, spans: list[tuple[int, int]]) -> None:
    """A relationship pattern anywhere but a MATCH pattern is a pattern predicate or a pattern
    comprehension, which the rewriter does not scope."""
    chars = list(s)
    for a, b in spans:
        chars[a:b] = " " * (b - a)
    if m := _REL_IN_EXPR.search("".join(chars)):
        raise _refuse("pattern expression outside MATCH", m.start(),
                      "pattern predicates and pattern comprehensions are not scoped; "
                      "use MATCH / OPTIONAL MATCH")


def _apply(query: str, edits: list[tuple[int, str]]) -> str:
    out, last = [], 0
    for pos, text in sorted(edits, key=lambda e: e[0]):  # stable: same position, same order
        out += [query[last:pos], text]
        last = pos
    return "".join([*out, query[last:]])


def scope_query(query: str) -> str:
    """Rewrite a read-only query so every pattern element is scoped by ``$__tenant``,
    ``$__clearance`` and ``$__v``; raise ``BadRequest`` for what cannot be scoped."""
    body = query.rstrip()
    while body.endswith(";"):
        body = body[:-1].rstrip()
    s = _structure(body)
    _check_expressions(s)
    d = _depths(s)
    words = _words(s)
    _check_routines(mask(body), words)
    scope, spans = _Scope(), []
    for k, w in enumerate(words):
        if w.upper == "MATCH" and w.keyword:
            clause = _clause(s, d, words, k)
            _scope_match(body, s, d, clause, scope)
            spans.append((clause.start, clause.pattern_end))
    _check_leftover_patterns(s, spans)
    star = _RETURN_STAR.search(s)
    if star and scope.counter and any(w.upper == "UNION" and w.keyword for w in words):
        raise _refuse("RETURN * in UNION", star.start(),
                      "generated variables for anonymous elements would differ between parts")
    return _apply(body, scope.edits)
