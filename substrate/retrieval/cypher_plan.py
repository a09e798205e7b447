"""The second, independent check of /cypher: what Neo4j will actually run (its EXPLAIN plan).

The rewriter (``cypher_scope``) decides from the query text; this module decides from the plan
and trusts nothing the rewriter did. Walking the plan tree, each operator's *introduced*
variables are its identifiers minus those of its children. Then:

* an operator that produces graph elements (scans, seeks, expands, variable-length and
  shortest-path expansion, quantified-path ``Repeat``/``Trail``, ``ProjectEndpoints``) must
  have every variable it introduces covered by the scope predicate, found in its own
  ``Details`` or an ancestor's: ``v.tenant_id = $__tenant`` (or an index seek on
  ``tenant_id = $__tenant``), ``coalesce(v.classification, ..) IN/= $__clearance`` and
  ``v.iv_from[__i] <= $__v`` for a node; ``v.tenant_id = $__tenant`` and
  ``v.valid_from_v <= $__v`` for a relationship; the reserved ``__x`` predicates over every
  relationship and both its ends for a variable-length one;
* ``ProcedureCall`` is allowed only for ``custom.substrate_retrieval_*($__tenant, $__v,
  $__clearance, ...)``; count-store operators (which count every tenant) are refused;
* an operator on neither list that introduces a variable is refused (unknown => no);
* ``CartesianProduct`` estimated above ``MAX_CARTESIAN_ROWS`` rows is refused;
* the plan must be read-only (``query_type`` ``r``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from substrate.errors import BadRequest, Forbidden
from substrate.retrieval.cypher_grammar import names

MAX_CARTESIAN_ROWS = 10_000

ELEMENT_OPERATORS = names("""
AllNodesScan NodeByLabelScan NodeIndexSeek NodeUniqueIndexSeek NodeIndexScan
NodeIndexContainsScan NodeIndexEndsWithScan NodeIndexSeekByRange NodeUniqueIndexSeekByRange
MultiNodeIndexSeek NodeByIdSeek NodeByElementIdSeek IntersectionNodeByLabelsScan
UnionNodeByLabelsScan SubtractionNodeByLabelsScan Expand(All) Expand(Into)
OptionalExpand(All) OptionalExpand(Into) VarLengthExpand(All) VarLengthExpand(Into)
VarLengthExpand(Pruning) VarLengthExpand(Pruning,BFS) VarLengthExpand(Pruning,BFS,All)
VarLengthExpand(Pruning,BFS,Into) BFSPruningVarLengthExpand(All) BFSPruningVarLengthExpand(Into)
ShortestPath StatefulShortestPath(All) StatefulShortestPath(Into) Repeat(Trail) Trail
ProjectEndpoints DirectedRelationshipTypeScan UndirectedRelationshipTypeScan
DirectedRelationshipIndexSeek UndirectedRelationshipIndexSeek DirectedRelationshipIndexScan
UndirectedRelationshipIndexScan DirectedRelationshipIndexContainsScan
UndirectedRelationshipIndexContainsScan DirectedRelationshipIndexEndsWithScan
UndirectedRelationshipIndexEndsWithScan DirectedRelationshipIndexSeekByRange
UndirectedRelationshipIndexSeekByRange DirectedAllRelationshipsScan
UndirectedAllRelationshipsScan DirectedRelationshipByIdSeek UndirectedRelationshipByIdSeek
DirectedRelationshipByElementIdSeek UndirectedRelationshipByElementIdSeek
DirectedUnionRelationshipTypesScan UndirectedUnionRelationshipTypesScan
""", lower=False)
VALUE_OPERATORS = names("""
ProduceResults Projection Aggregation EagerAggregation OrderedAggregation Unwind RollUpApply
Argument Apply SemiApply AntiSemiApply SelectOrSemiApply SelectOrAntiSemiApply LetSemiApply
LetAntiSemiApply LetSelectOrSemiApply LetSelectOrAntiSemiApply ConditionalApply
AntiConditionalApply Optional Filter Limit ExhaustiveLimit Skip Sort PartialSort Top
PartialTop Top1WithTies Distinct OrderedDistinct Eager Union OrderedUnion EmptyResult
CacheProperties CartesianProduct NodeHashJoin ValueHashJoin NodeLeftOuterHashJoin
NodeRightOuterHashJoin AssertSameNode AssertSameRelationship Anti PreserveOrder
NullifyMetadata EmptyRow ProcedureCall
""", lower=False)
REFUSED_OPERATORS = {
    "NodeCountFromCountStore": "it counts every tenant's nodes",
    "RelationshipCountFromCountStore": "it counts every tenant's relationships",
}
_SCOPED_PROCEDURE = re.compile(
    r"custom\.substrate_retrieval_\w+\(\$__tenant, \$__v, \$__clearance[,)]")
# an index seek on tenant_id, alone or in a composite index: ``s:Service(tenant_id, ceid) WHERE
# tenant_id = $__tenant AND ceid = $id``
_SEEK = r"[^(\s]*\([^)]*\btenant_id\b[^)]*\)\]? WHERE (?:.* AND )?tenant_id = \$__tenant\b"
_VARLENGTH_MARKERS = (
    "__x.tenant_id = $__tenant", "__x.valid_from_v <= $__v",
    "startNode(__x).tenant_id = $__tenant", "endNode(__x).tenant_id = $__tenant",
    "startNode(__x).iv_from", "endNode(__x).iv_from",
    "coalesce(startNode(__x).classification", "coalesce(endNode(__x).classification",
)


@dataclass(frozen=True)
class _Op:
    kind: str
    details: str
    identifiers: frozenset[str]
    estimated_rows: float
    children: tuple[_Op, ...]


def _op(plan: Any) -> _Op:
    args = plan.get("args") or plan.get("arguments") or {}
    kind = str(plan.get("operatorType", "")).split("@", 1)[0]
    return _Op(kind, str(args.get("Details", "")), frozenset(plan.get("identifiers") or ()),
               float(args.get("EstimatedRows", 0) or 0),
               tuple(_op(c) for c in plan.get("children") or ()))


def _walk(op: _Op, ancestors: tuple[_Op, ...] = (), args: frozenset[str] = frozenset()
          ) -> Iterator[tuple[_Op, tuple[_Op, ...], frozenset[str]]]:
    """Each operator with its ancestors and the arguments it receives: the right-hand side of
    an Apply-like operator (and a quantified path's inner plan) gets the left side's rows."""
    yield op, ancestors, args
    passes = "Apply" in op.kind or op.kind in ("Repeat(Trail)", "Trail")
    for i, child in enumerate(op.children):
        child_args = args | op.children[0].identifiers if passes and i > 0 else args
        yield from _walk(child, (*ancestors, op), child_args)


def _ref(v: str) -> str:
    """Regex for a reference to ``v``'s property, plain or cached: ``v.`` / ``cache[v.``."""
    return rf"(?<![\w`.]){re.escape(v)}\."


def _node_covered(v: str, text: str, own: str) -> bool:
    tenant = (re.search(_ref(v) + r"tenant_id\]? = \$__tenant\b", text)
              or re.search(rf"(?<![\w`]){re.escape(v)}:{_SEEK}", own))
    clearance = re.search(r"coalesce\((?:cache\[)?" + _ref(v) + r"classification\]?, [^)]*\) "
                          r"(?:IN \$__clearance\b|= \$__clearance\[0\])", text)
    version = re.search(r"\(?(?:cache\[)?" + _ref(v) + r"iv_from\]?\)?\[__i\] <= \$__v\b", text)
    return bool(tenant and clearance and version)


def _rel_covered(v: str, text: str, own: str) -> bool:
    tenant = (re.search(_ref(v) + r"tenant_id\]? = \$__tenant\b", text)
              or re.search(rf"\[{re.escape(v)}:{_SEEK}", own))
    version = re.search(_ref(v) + r"valid_from_v\]? <= \$__v\b", text)
    return bool(tenant and version)


def _is_relationship(v: str, details: str) -> bool:
    return re.search(rf"\[{re.escape(v)}[\]:* ]", details) is not None


def _is_varlength(op: _Op) -> bool:
    return op.kind.startswith(("VarLengthExpand", "BFSPruningVarLengthExpand", "ShortestPath",
                               "StatefulShortestPath"))


def _refuse(op: _Op, reason: str, variable: str | None = None) -> BadRequest:
    return BadRequest(f"Cypher refused by the plan check: {op.kind}: {reason}",
                      {"construct": "plan", "operator": op.kind, "variable": variable,
                       "reason": reason})


def check_plan(plan: Any, query_type: str | None) -> None:
    """Raise unless the EXPLAIN ``plan`` (the driver's dict) is read-only and scoped."""
    if query_type != "r":
        raise Forbidden("only read-only queries are allowed", {"plan_query_type": query_type})
    root = _op(plan)
    for op, ancestors, args in _walk(root):
        introduced = op.identifiers.difference(args, *(c.identifiers for c in op.children))
        if op.kind in REFUSED_OPERATORS:
            raise _refuse(op, REFUSED_OPERATORS[op.kind])
        if op.kind == "CartesianProduct" and op.estimated_rows > MAX_CARTESIAN_ROWS:
            raise _refuse(op, f"a cartesian product of about {op.estimated_rows:.0f} rows "
                          f"(at most {MAX_CARTESIAN_ROWS}); connect the patterns")
        if op.kind == "ProcedureCall" and not _SCOPED_PROCEDURE.search(op.details):
            raise _refuse(op, "only custom.substrate_retrieval_* with the reserved scope "
                          "parameters may be called")
        if not introduced or op.kind in VALUE_OPERATORS:
            continue
        if op.kind not in ELEMENT_OPERATORS:
            raise _refuse(op, "an operator the plan check does not know introduces "
                          "variables", sorted(introduced)[0])
        text = " ".join(o.details for o in (op, *ancestors))
        for v in sorted(introduced):
            _check_covered(op, v, text)


def _check_covered(op: _Op, v: str, text: str) -> None:
    if _is_varlength(op) and (_is_relationship(v, op.details) or re.match(
            rf"{re.escape(v)} = ", op.details)):
        if all(marker in text for marker in _VARLENGTH_MARKERS):
            return
        raise _refuse(op, "a variable-length relationship is not scoped", v)
    if _is_relationship(v, op.details):
        if _rel_covered(v, text, op.details):
            return
        raise _refuse(op, "a relationship is not scoped", v)
    if _node_covered(v, text, op.details):
        return
    raise _refuse(op, "a node is not scoped", v)
