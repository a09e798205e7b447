"""Point-in-time property reads in ``POST /cypher ... AT(<past>)`` (issue 9).

Neo4j keeps one node per entity and updates its properties in place, so a pinned query that
projects a property (``MATCH (s:Service) RETURN s.env``) would read today's value. The scope
predicates already keep only what was valid at the version; this pass rewrites, in the scoped
query, every property read on a variable so that a node whose property had another value at
the version answers that value: ``s.env`` becomes the ``past_prop`` macro of
``cypher/_macros.j2`` (a look-up in ``$__past``, ceid -> {key: value then}, built from the
change log by :func:`substrate.retrieval.temporal_props.past_values`), ``s {.env}`` becomes
``s {env: <past_prop>}`` and ``properties(s)`` the ``past_props`` macro.

Reads of the bookkeeping properties (tenant, validity, ceid, evidence...) are left alone: the
change log does not version them and the scope predicates read them. Relationships need no
rewrite: a changed relationship is closed and a new one opened, so the scope predicate
already picks the version that was valid. Not rewritten: dynamic keys (``s[$k]``), ``.*``
in a map projection, ``keys(s)`` and property maps inside patterns (``(s {env: ...})``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from substrate.cypher import macro
from substrate.graph.neo4j_write import RESERVED
from substrate.retrieval.cypher_grammar import Tree, parse

BOOKKEEPING = RESERVED | {"classification", "jurisdiction", "alias_text", "valid_from",
                          "valid_to"}


@dataclass(frozen=True)
class PastReads:
    """A scoped query with its property reads rewritten, and the keys it reads (``None``:
    every key, the query reads whole property maps)."""

    text: str
    keys: frozenset[str] | None


def _key(node: Tree) -> tuple[str, str]:
    """(key as written, key) of a ``property`` node."""
    name_node = node.first("propertyKeyName")
    assert name_node is not None
    written = "".join(t.text for t in name_node.tokens())
    return written, written[1:-1].replace("``", "`") if written.startswith("`") else written


def _literal(key: str) -> str:
    return "'" + key.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _variable(node: Tree | None) -> str | None:
    """The variable an ``expression1`` consists of (or a map projection starts with),
    unless it is a generated one."""
    var = None if node is None else node.first("variable")
    if node is None or var is None or (node.rule == "expression1" and len(node.children) != 1):
        return None
    name = "".join(t.text for t in var.tokens())
    return None if name.strip("`").startswith("__") else name


class _Edits:
    def __init__(self, text: str) -> None:
        self.text = text
        self.edits: list[tuple[int, int, str]] = []
        self.keys: set[str] | None = set()

    def read(self, key: str) -> None:
        if self.keys is not None:
            self.keys.add(key)

    def apply(self) -> str:
        out, last = [], 0
        for start, stop, text in sorted(self.edits):
            out += [self.text[last:start], text]
            last = stop
        return "".join([*out, self.text[last:]])


def _property_read(node: Tree, ed: _Edits) -> None:
    """``x.key`` (the first postfix of a variable) -> the ``past_prop`` macro."""
    var = _variable(node.first("expression1"))
    post = node.first("postFix")
    prop = post.first("property") if post is not None else None
    if var is None or prop is None:
        return
    written, key = _key(prop)
    if key in BOOKKEEPING:
        return
    ed.read(key)
    ed.edits.append((node.start, prop.stop, macro("past_prop", var, written, _literal(key))))


def _projection(node: Tree, ed: _Edits) -> None:
    """``x {.key}`` -> ``x {key: <past_prop>}``."""
    var = _variable(node)
    if var is None:
        return
    for element in node.rules("mapProjectionElement"):
        prop = element.first("property")
        if prop is None:
            continue
        written, key = _key(prop)
        if key in BOOKKEEPING:
            continue
        ed.read(key)
        ed.edits.append((element.start, element.stop,
                         f"{written}: {macro('past_prop', var, written, _literal(key))}"))


def _properties_call(node: Tree, ed: _Edits) -> None:
    """``properties(x)`` -> the ``past_props`` macro."""
    name = node.first("functionName")
    args = node.rules("functionArgument")
    if name is None or "".join(t.text for t in name.tokens()).lower() != "properties" \
            or len(args) != 1:
        return
    inner = [n for n in args[0].walk() if n.rule == "expression2"]
    var = _variable(inner[0].first("expression1")) if inner and len(inner[0].children) == 1 \
        else None
    if var is None:
        return
    ed.keys = None
    ed.edits.append((node.start, node.stop, macro("past_props", var)))


def _keep_column_names(root: Tree, ed: _Edits) -> None:
    """A rewritten return item without ``AS`` keeps the column name it had (``s.env``)."""
    for item in (n for n in root.walk() if n.rule == "returnItem"):
        if item.has_token("AS") or not any(item.start <= a < item.stop for a, _, _ in ed.edits):
            continue
        column = ed.text[item.start:item.stop].replace("`", "``")
        ed.edits.append((item.stop, item.stop, f" AS `{column}`"))


_READS: dict[str, Callable[[Tree, _Edits], None]] = {
    "expression2": _property_read, "mapProjection": _projection,
    "functionInvocation": _properties_call,
}


def rewrite_past_reads(scoped: str) -> PastReads | None:
    """The scoped query with its property reads rewritten (see the module doc); ``None``
    when it reads no versioned property."""
    root = parse(scoped)
    ed = _Edits(scoped)
    for node in root.walk():
        handler = _READS.get(node.rule)
        if handler is not None:
            handler(node, ed)
    if not ed.edits:
        return None
    _keep_column_names(root, ed)
    return PastReads(ed.apply(), None if ed.keys is None else frozenset(ed.keys))
