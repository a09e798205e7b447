"""The /cypher scope: parse with Neo4j's Cypher 5 grammar, allow-list, rewrite (RSN-02, RSN-07).

``scope_query(text, params)`` parses the query (``cypher_grammar``, the only lexer and parser of
/cypher), refuses whatever is not on the allow-lists, and rewrites the rest so that every node
and relationship pattern element is visible only in the caller's scope: tenant ``$__tenant``,
clearance levels ``$__clearance``, snapshot version ``$__v`` (the predicates are the
``node_at``/``rel_at`` macros of ``cypher/_macros.j2``, the same as every template's).

Allow-list (every grammar rule of the parse tree must be on ``ALLOWED_RULES``):
* clauses MATCH, OPTIONAL MATCH, WITH, UNWIND, RETURN, ORDER BY/SKIP/LIMIT, UNION, FINISH,
  ``CALL { }`` subqueries (not ``IN TRANSACTIONS``) and ``CALL`` of a procedure on
  ``PROCEDURES``; expressions of every kind, including EXISTS/COUNT/COLLECT subqueries,
  pattern and list comprehensions, quantified path patterns, selectors and label expressions.
* Writes (CREATE, MERGE, SET, DELETE, REMOVE, FOREACH, INSERT), LOAD CSV, USE, every command
  (SHOW, admin, schema) and ``USING PERIODIC COMMIT`` are refused with 403; EXPLAIN, PROFILE
  and ``CYPHER`` options are not in the grammar (the service adds its own EXPLAIN): 400.
* Functions: the built-ins on ``BUILTIN_FUNCTIONS`` and the few APOC ones on
  ``APOC_FUNCTIONS``; anything else (``apoc.nodes.get``, ``gds.util.asNode``,
  ``apoc.cypher.*``...) is refused — a function could fetch elements outside any pattern.
* Procedures: only ``custom.substrate_retrieval_*`` (the read templates installed for Neo4j
  Browser): their first three arguments are replaced with ``$__tenant, $__v, $__clearance``,
  so the template's own scoping applies (not for a reader restricted to jurisdictions: the
  procedures' trailing ``jurisdictions`` argument is optional, so none is allowed then).
  Every other procedure is refused: index queries return
  a global top-k (how many of the tenant's come back depends on other tenants' data), APOC
  path expansion and GDS streams read outside any pattern, and ``db.labels()``-style metadata
  tells which labels other tenants use.
* Names and parameters starting with ``__`` are reserved.

Rewrite: each node pattern gets ``WHERE <node_at>`` inside its parentheses (``(n:A {k: 1}
WHERE e)`` -> ``(n:A {k: 1} WHERE (e) AND <node_at(n)>)``) and each fixed-length relationship
``[r WHERE <rel_at>]``; anonymous elements get generated names (``__n0``, ``__r1``, ``-->``
becomes ``-[__r1 WHERE ...]->``). An inline predicate is part of the pattern, so it holds in
MATCH, OPTIONAL MATCH (nulls, not lost rows), quantified path patterns (every iteration),
shortest paths, EXISTS/COUNT/COLLECT, pattern comprehensions and every UNION part alike. A
variable-length relationship ``[r*1..3]`` cannot carry one; its clause (MATCH, the subquery or
the comprehension) gets ``all(__x IN r WHERE <rel_at(__x)> AND <node_at(startNode(__x))> AND
<node_at(endNode(__x))>)``, which scopes the intermediate nodes too. A pattern predicate
``WHERE (a)-->(b)`` becomes ``EXISTS { (a)-->(b) }`` (pattern expressions cannot name their
elements). Refused as unscopable: ``shortestPath(...)`` used as an expression and
variable-length relationships inside quantified path patterns.

Bounded work: ``=~`` takes a literal or parameter pattern without nested or stacked unbounded
quantifiers or back-references (the JVM's regex engine cannot be interrupted); ``range()`` with
literal or parameter bounds spanning more than ``MAX_RANGE`` values is refused. The rest of the
work is bounded by the plan check (``cypher_plan``), the transaction timeout and Neo4j's
transaction memory limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from substrate.cypher import macro
from substrate.errors import BadRequest, Forbidden
from substrate.retrieval.cypher_grammar import Tok, Tree, lex, names, parse
from substrate.retrieval.scope import ReadScope

RESERVED_PARAMETERS = ("__v", "__tenant", "__clearance")
MAX_RANGE = 100_000
MAX_REGEX_CHARS = 200
SCOPED_PROCEDURE_PREFIX = "custom.substrate_retrieval_"

WRITE_RULES: dict[str, str] = {
    "createClause": "write clause", "insertClause": "write clause", "mergeClause": "write clause",
    "setClause": "write clause", "removeClause": "write clause", "deleteClause": "write clause",
    "foreachClause": "write clause", "loadCSVClause": "LOAD CSV",
    "subqueryInTransactionsParameters": "CALL { } IN TRANSACTIONS",
    "periodicCommitQueryHintFailure": "USING PERIODIC COMMIT", "useClause": "database selection",
    "command": "administration or schema command",
}
ALLOWED_RULES = names("""
statements statement regularQuery singleQuery clause finishClause returnClause returnBody
returnItem returnItems orderItem ascToken descToken orderBy skip limit whereClause withClause
matchClause matchMode hint unwindClause callClause procedureName procedureArgument
procedureResultItem subqueryClause subqueryScope orderBySkipLimitClause patternList pattern
quantifier anonymousPattern shortestPathPattern patternElement selector groupToken pathToken
pathPatternNonEmpty nodePattern parenthesizedPath nodeLabels nodeLabelsIs dynamicExpression
dynamicAnyAllExpression dynamicLabelType labelType relType labelOrRelType properties
relationshipPattern leftArrow arrowLine rightArrow pathLength labelExpression labelExpression4
labelExpression4Is labelExpression3 labelExpression3Is labelExpression2 labelExpression2Is
labelExpression1 labelExpression1Is expression expression11 expression10 expression9
expression8 expression7 comparisonExpression6 normalForm expression6 expression5 expression4
expression3 expression2 postFix property dynamicProperty propertyExpression
dynamicPropertyExpression expression1 literal caseExpression caseAlternative
extendedCaseExpression extendedCaseAlternative extendedWhen listComprehension
patternComprehension reduceExpression listItemsPredicate normalizeFunction trimFunction
patternExpression shortestPathExpression parenthesizedExpression mapProjection
mapProjectionElement countStar existsExpression countExpression collectExpression
numberLiteral signedIntegerLiteral listLiteral propertyKeyName parameter parameterName
functionInvocation functionArgument functionName namespace variable type typePart typeName
typeNullability typeListSuffix map symbolicVariableNameString
escapedSymbolicVariableNameString unescapedSymbolicVariableNameString symbolicNameString
escapedSymbolicNameString unescapedSymbolicNameString symbolicLabelNameString
unescapedLabelSymbolicNameString unescapedLabelSymbolicNameString_ stringLiteral endOfFile
""", lower=False)
BUILTIN_FUNCTIONS = names("""
abs acos all any asin atan atan2 avg btrim ceil char_length character_length coalesce collect
cos cot count date date.realtime date.statement date.transaction date.truncate datetime
datetime.fromepoch datetime.fromepochmillis datetime.realtime datetime.statement
datetime.transaction datetime.truncate degrees duration duration.between duration.inDays
duration.inMonths duration.inSeconds e elementId endNode exists exp floor haversin head id
isEmpty isNaN keys labels last left length localdatetime localdatetime.realtime
localdatetime.statement localdatetime.transaction localdatetime.truncate localtime
localtime.realtime localtime.statement localtime.transaction localtime.truncate log log10 lower
ltrim max min nodes none normalize nullIf percentileCont percentileDisc pi point
point.distance point.withinBBox properties radians rand randomUUID range reduce relationships
replace reverse right round rtrim sign sin single size split sqrt startNode stdev stdevp
substring sum tail tan time time.realtime time.statement time.transaction time.truncate
timestamp toBoolean toBooleanList toBooleanOrNull toFloat toFloatList toFloatOrNull toInteger
toIntegerList toIntegerOrNull toLower toString toStringList toStringOrNull toUpper trim type
upper valueType vector.similarity.cosine vector.similarity.euclidean
""", lower=True)
APOC_FUNCTIONS = names("""
apoc.map.removeKeys apoc.map.removeKey apoc.map.submap apoc.map.merge apoc.map.fromPairs
apoc.map.fromLists apoc.map.values apoc.coll.toSet apoc.coll.flatten apoc.coll.sort
apoc.coll.sum apoc.coll.avg apoc.coll.max apoc.coll.min apoc.coll.contains apoc.coll.indexOf
apoc.coll.union apoc.coll.intersection apoc.coll.subtract apoc.text.join apoc.text.capitalize
""", lower=True)
# Unbounded quantifier after a group that itself holds a quantifier or alternation: (a+)+,
# (a|aa)*, (.*)*; a back-reference; or more than three unbounded quantifiers (.*.*.*x).
_UNBOUNDED = r"(?:[*+]|\{\d+,\})"
_NESTED = re.compile(r"\((?:[^()\\]|\\.)*(?:[*+|]|\{\d+,\d*\})(?:[^()\\]|\\.)*\)" + _UNBOUNDED)
_BACKREF = re.compile(r"\\[1-9]|\\k<")


def node_predicate(n: str) -> str:
    """Node ``n`` visible at ``$__v`` for ``$__tenant``/``$__clearance`` (cypher/_macros.j2)."""
    return macro("node_at", n, "__")


def rel_predicate(r: str) -> str:
    """Relationship ``r`` visible at ``$__v`` for ``$__tenant`` (cypher/_macros.j2)."""
    return macro("rel_at", r, "__")


def varlength_predicate(r: str) -> str:
    """Every relationship of the list ``r`` and both its ends are visible."""
    return (f"all(__x IN {r} WHERE {rel_predicate('__x')} AND "
            f"{node_predicate('startNode(__x)')} AND {node_predicate('endNode(__x)')})")


def scope_parameters(scope: ReadScope) -> dict[str, Any]:
    """The reserved parameters a rewritten query needs (merge them last, over user params):
    the scope's template parameters (``ReadScope.params``) with ``__`` in front."""
    return {f"__{k}": v for k, v in scope.params().items()}


def refuse(construct: str, reason: str, at: int | None = None) -> BadRequest:
    return BadRequest(f"Cypher refused: {construct}: {reason}",
                      {"construct": construct, "reason": reason, "offset": at})


def _forbid(construct: str, reason: str, at: int) -> Forbidden:
    return Forbidden(f"Cypher refused: {reason} ({construct})",
                     {"construct": construct, "reason": reason, "offset": at})


@dataclass(frozen=True)
class AtClause:
    """What a trailing ``AT(...)`` named: a timestamp, a snapshot version or a parameter."""

    timestamp: datetime | None = None
    snapshot_version: int | None = None
    parameter: str | None = None


@dataclass(frozen=True)
class ScopedQuery:
    text: str  # the rewritten query, ready to EXPLAIN and run
    original: str
    procedures: tuple[str, ...]
    functions: tuple[str, ...]


def _significant(tokens: list[Tok]) -> list[Tok]:
    return [t for t in tokens if t.type not in ("SPACE", "SINGLE_LINE_COMMENT",
                                                "MULTI_LINE_COMMENT")]


def _literal_string(tok: Tok) -> str:
    """The value of a STRING_LITERAL token (Cypher escapes)."""
    body = tok.text[1:-1]
    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", _unescape, body, flags=re.S)


def _unescape(m: re.Match[str]) -> str:
    c = m.group(1)
    if c.startswith("u") and len(c) == 5:
        return chr(int(c[1:], 16))
    return {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}.get(c, c)


def _parse_at(args: list[Tok]) -> AtClause:
    kinds = [t.type for t in args]
    strings = [t for t in args if t.type.startswith("STRING_LITERAL")]
    if kinds == ["UNSIGNED_DECIMAL_INTEGER"]:
        return AtClause(snapshot_version=int(args[0].text))
    if len(kinds) == 2 and kinds[0] == "DOLLAR":
        return AtClause(parameter=args[1].text.strip("`"))
    if len(strings) == 1 and (len(args) == 1 or (
            len(args) == 4 and args[0].text.lower() == "datetime")):
        text = _literal_string(strings[0]).strip()
        try:
            stamp = datetime.fromisoformat(text)
        except ValueError as e:
            raise BadRequest("AT(...) timestamp is not ISO-8601", {"at": text}) from e
        return AtClause(timestamp=stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC))
    raise BadRequest("AT(...) takes an ISO-8601 string, a snapshot version or a $parameter",
                     {"at": " ".join(t.text for t in args)})


def split_at(query: str) -> tuple[str, AtClause | None]:
    """``MATCH (n) RETURN n AT('2026-10-01T00:00:00Z')`` -> the query without it, and what it
    named; also drops trailing ``;``. Read with the grammar's lexer."""
    toks = _significant(lex(query))
    while toks and toks[-1].type == "SEMICOLON":
        toks.pop()
    if not toks:
        raise BadRequest("empty Cypher query")
    end = toks[-1].stop
    if toks[-1].type == "RPAREN":
        depth, k = 0, len(toks) - 1
        while k >= 0:
            depth += (toks[k].type == "RPAREN") - (toks[k].type == "LPAREN")
            if depth == 0:
                break
            k -= 1
        if k >= 2 and toks[k - 1].type == "AT" and toks[k - 2].type != "DOT":
            return query[: toks[k - 1].start].rstrip(), _parse_at(toks[k + 1: -1])
    return query[:end], None


@dataclass
class _Rewrite:
    text: str
    params: dict[str, Any]
    # (start, stop, order, text): at one position "(" of a wrap (-1) goes first, ") AND ..."
    # closing a wrap (+1) last, the rest in the order they were made
    edits: list[tuple[int, int, int, str]] = field(default_factory=list)
    host_preds: dict[int, tuple[Tree, list[str]]] = field(default_factory=dict)
    counter: int = 0
    procedures: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    jurisdictions_restricted: bool = False

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"__{prefix}{self.counter - 1}"

    def insert(self, at: int, text: str, order: int = 0) -> None:
        self.edits.append((at, at, order, text))

    def wrap(self, expr: Tree, conjunction: str) -> None:
        """``expr`` -> ``(expr) AND conjunction``."""
        self.insert(expr.start, "(", -1)
        self.insert(expr.stop, f") AND {conjunction}", 1)

    def apply(self) -> str:
        out, last = [], 0
        for start, stop, _, text in sorted(self.edits, key=lambda e: (e[0], e[2])):
            if start < last:
                continue  # inside a replaced argument
            out += [self.text[last:start], text]
            last = max(last, stop)
        return "".join([*out, self.text[last:]])


def _tok(node: Tree, kind: str) -> Tok | None:
    return next((c.tok for c in node.children if c.tok is not None and c.tok.type == kind), None)


def _src(rw: _Rewrite, node: Tree) -> str:
    return rw.text[node.start: node.stop]


def _name(tok: Tok) -> str:
    return tok.text[1:-1].replace("``", "`") if tok.text.startswith("`") else tok.text


def _check_rules(root: Tree) -> None:
    statements = root.rules("statement")
    if len(statements) != 1:
        raise _forbid(";", "multiple statements", statements[1].start if statements else 0)
    for node in root.walk():
        if node.tok is not None:
            if node.tok.type in ("IDENTIFIER", "ESCAPED_SYMBOLIC_NAME") and \
                    _name(node.tok).startswith("__"):
                raise refuse("reserved name", f"`{_name(node.tok)}`: names and parameters "
                             "starting with `__` are reserved", node.tok.start)
            continue
        if node.rule in WRITE_RULES:
            raise _forbid(node.rule, WRITE_RULES[node.rule], node.start)
        if node.rule not in ALLOWED_RULES:
            raise refuse(node.rule, "not allowed in /cypher", node.start)


def _qualified(node: Tree, rw: _Rewrite) -> str:
    """``namespace.name`` of a functionName/procedureName, back-ticks removed, lower case."""
    return "".join(_name(t) if t.type == "ESCAPED_SYMBOLIC_NAME" else t.text
                   for t in node.tokens()).lower()


def _value(expr: Tree, rw: _Rewrite) -> Any:
    """A literal number/string or a parameter's value; ``None`` if the expression is neither."""
    toks = expr.tokens()
    kinds = [t.type for t in toks]
    if kinds and kinds[0] == "DOLLAR" and len(toks) == 2:
        return rw.params.get(_name(toks[1]))
    if len(toks) == 1 and toks[0].type.startswith("STRING_LITERAL"):
        return _literal_string(toks[0])
    sign = -1 if kinds[:1] == ["MINUS"] else 1
    body = toks[1:] if sign < 0 else toks
    if len(body) == 1 and body[0].type == "UNSIGNED_DECIMAL_INTEGER":
        return sign * int(body[0].text)
    return None


def _check_function(node: Tree, rw: _Rewrite) -> None:
    name_node = node.first("functionName")
    assert name_node is not None
    name = _qualified(name_node, rw)
    rw.functions.append(name)
    if name not in BUILTIN_FUNCTIONS and name not in APOC_FUNCTIONS:
        raise refuse(f"function {name}", "not on the /cypher function allow-list (it could "
                     "read elements outside the query's patterns)", node.start)
    if name == "range":
        args = [_value(a, rw) for a in node.rules("functionArgument")]
        if len(args) >= 2 and all(isinstance(a, int) for a in args):
            step = args[2] if len(args) > 2 else 1
            span = 0 if step == 0 else (args[1] - args[0]) // step + 1
            if span > MAX_RANGE:
                raise refuse("range()", f"spans {span} values; at most {MAX_RANGE}",
                             node.start)


def check_regex(pattern: Any, at: int) -> None:
    if not isinstance(pattern, str):
        raise refuse("=~", "the regular expression must be a string literal or a string "
                     "parameter", at)
    unbounded = len(re.findall(r"(?<!\\)" + _UNBOUNDED, pattern))
    if (len(pattern) > MAX_REGEX_CHARS or _NESTED.search(pattern) or _BACKREF.search(pattern)
            or unbounded > 3):
        raise refuse("=~", "the regular expression could backtrack catastrophically (nested "
                     "or many unbounded quantifiers, back-references, or longer than "
                     f"{MAX_REGEX_CHARS} characters)", at)


def _check_regex_use(node: Tree, rw: _Rewrite) -> None:
    if _tok(node, "REGEQ") is None:
        return
    rhs = node.first("expression6")
    assert rhs is not None
    check_regex(_value(rhs, rw), node.start)


def _scope_procedure(node: Tree, rw: _Rewrite) -> None:
    name_node = node.first("procedureName")
    assert name_node is not None
    name = _qualified(name_node, rw)
    rw.procedures.append(name)
    if rw.jurisdictions_restricted:
        raise _forbid(f"procedure {name}", "a principal restricted to jurisdictions cannot call "
                     "procedures in /cypher (their jurisdictions argument is optional)",
                     node.start)
    if not name.startswith(SCOPED_PROCEDURE_PREFIX):
        raise refuse(f"procedure {name}", "only custom.substrate_retrieval_* procedures run in "
                     "/cypher: other procedures read outside the tenant's scope", node.start)
    args = node.rules("procedureArgument")
    if len(args) < 3:
        raise refuse(f"procedure {name}", "takes tenant, snapshot and clearance first",
                     node.start)
    for arg, param in zip(args[:3], ("__tenant", "__v", "__clearance"), strict=True):
        rw.edits.append((arg.start, arg.stop, 0, f"${param}"))


def _add_host_predicate(node: Tree, pred: str, rw: _Rewrite) -> None:
    host = node.inside("matchClause", "existsExpression", "countExpression",
                       "patternComprehension", "patternExpression", "shortestPathExpression",
                       "parenthesizedPath")
    if host is None or host.rule in ("shortestPathExpression", "parenthesizedPath"):
        raise refuse("variable-length relationship", "cannot be scoped here (inside a "
                     "quantified path pattern or a shortestPath expression)", node.start)
    rw.host_preds.setdefault(id(host), (host, []))[1].append(pred)


def _scope_node(node: Tree, rw: _Rewrite) -> None:
    lparen, rparen = _tok(node, "LPAREN"), _tok(node, "RPAREN")
    assert lparen is not None and rparen is not None
    name = _element_name(node, lparen, "n", rw)
    _inline(node, node_predicate(name), rparen.start, rw)


def _element_name(node: Tree, opening: Tok, prefix: str, rw: _Rewrite) -> str:
    """The element's variable as written, or a generated one inserted after ``(``/``[``."""
    var = node.first("variable")
    if var is not None:
        return _src(rw, var)
    name = rw.name(prefix)
    rw.insert(opening.stop, name + " ")
    return name


def _inline(node: Tree, pred: str, close: int, rw: _Rewrite) -> None:
    if _tok(node, "WHERE") is not None:
        expr = node.first("expression")
        assert expr is not None
        rw.wrap(expr, pred)
    else:
        rw.insert(close, f" WHERE {pred}")


def _scope_relationship(node: Tree, rw: _Rewrite) -> None:
    lbracket, rbracket = _tok(node, "LBRACKET"), _tok(node, "RBRACKET")
    if lbracket is None or rbracket is None:
        line = node.rules("arrowLine")[0]
        name = rw.name("r")
        rw.insert(line.stop, f"[{name} WHERE {rel_predicate(name)}]")
        return
    name = _element_name(node, lbracket, "r", rw)
    if node.first("pathLength") is not None:
        _add_host_predicate(node, varlength_predicate(name), rw)
    else:
        _inline(node, rel_predicate(name), rbracket.start, rw)


def _emit_host(host: Tree, preds: list[str], rw: _Rewrite) -> None:
    conj = " AND ".join(preds)
    if host.rule == "patternExpression":
        rw.insert(host.stop, f" WHERE {conj}")
        return
    if host.rule == "patternComprehension":
        where, bar = _tok(host, "WHERE"), _tok(host, "BAR")
        assert bar is not None
        if where is None:
            rw.insert(bar.start, f"WHERE {conj} ")
            return
        rw.wrap(host.rules("expression")[0], conj)
        return
    clause = host.first("whereClause")
    if clause is None:
        anchor = host.first("patternList") if host.rule != "matchClause" else host
        assert anchor is not None
        rw.insert(anchor.stop, f" WHERE {conj}")
        return
    expr = clause.first("expression")
    assert expr is not None
    rw.wrap(expr, conj)


def scope_query(query: str, params: dict[str, Any] | None = None, *,
                jurisdictions_restricted: bool = False) -> ScopedQuery:
    """Parse, check and rewrite ``query`` (no ``AT``); raise ``BadRequest``/``Forbidden``.
    ``jurisdictions_restricted``: the reader sees only some jurisdictions (no procedures)."""
    root = parse(query)
    _check_rules(root)
    rw = _Rewrite(query, dict(params or {}), jurisdictions_restricted=jurisdictions_restricted)
    for node in root.walk():
        if node.rule == "shortestPathExpression":
            raise refuse("shortestPath expression", "use MATCH p = shortestPath(...) so its "
                         "elements are scoped", node.start)
        if node.rule == "functionInvocation":
            _check_function(node, rw)
        elif node.rule == "comparisonExpression6":
            _check_regex_use(node, rw)
        elif node.rule in ("extendedWhen",) and _tok(node, "REGEQ") is not None:
            rhs = node.first("expression6")
            assert rhs is not None
            check_regex(_value(rhs, rw), node.start)
        elif node.rule == "callClause":
            _scope_procedure(node, rw)
        elif node.rule == "nodePattern":
            _scope_node(node, rw)
        elif node.rule == "relationshipPattern":
            _scope_relationship(node, rw)
        elif node.rule == "patternExpression":
            rw.insert(node.start, "EXISTS { ")
    for host, preds in rw.host_preds.values():
        _emit_host(host, preds, rw)
    for node in root.walk():
        if node.rule == "patternExpression":
            rw.insert(node.stop, " }")
    return ScopedQuery(rw.apply(), query, tuple(sorted(set(rw.procedures))),
                       tuple(sorted(set(rw.functions))))

