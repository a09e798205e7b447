"""The JSONL record format: one graph record per line, for whatever does not live in a repo.

A line is a JSON object; blank lines are skipped. Two kinds:

Node::

    {"kind": "node", "label": "Service", "ceid": "service:checkout",
     "props": {"name": "checkout", ...}, "confidence": 1.0, "provenance": ["jira:SHOP-31"]}

* ``label``: a label of ``substrate/ontology.yaml``; ``ceid`` must start with that label's
  ``ceid_prefix`` and a colon (use :func:`substrate.graph.records.ceid` to build it, so that
  the ids match the git connector's: ``service:checkout``, ``team:payments``, ``pr:431``);
* ``props``: an object with a non-empty string ``name`` (and the label's other required
  properties, e.g. ``kind`` for ProjectItem/Infrastructure, ``status`` for DecisionNode);
* ``confidence`` (optional, default 1.0) in (0, 1]; ``provenance`` optional list of strings.

Edge::

    {"kind": "edge", "type": "CALLS", "src": "service:a", "dst": "service:b",
     "evidence_ref": "github:acme/shop#pr-412", "confidence": 0.97, "weight": 1.0,
     "source": "org", "props": {}}

* ``type``: a relationship type of the ontology; ``src``/``dst``: ceids;
* ``evidence_ref``: required, non-empty — what proves the edge (``github:acme/shop#pr-412``,
  ``jira:SHOP-31``, ``slack:#payments/1696502400``);
* ``confidence`` (default 1.0) in (0, 1]; ``weight`` (default 1.0) a number;
  ``source`` (default ``"jsonl"``); ``props`` (default ``{}``) an object.

Any other key is an error. :func:`parse_jsonl_lines` raises :class:`ValueError` whose
message starts with ``line <n>:`` (1-based) for the first bad line.

Conventions used by the demo organisation (``substrate/demo/org.jsonl``):
``Developer -MEMBER_OF-> Team``, ``Developer -AUTHORED-> PullRequest``,
``PullRequest -CHANGES-> Service``, ``PullRequest -LINKS_TO-> ProjectItem``,
``ProjectItem(issue) -PART_OF-> ProjectItem(epic)``,
``ProjectItem(epic) -LINKS_TO-> IntentAssertion -ASSERTS-> Service``,
``ExceptionNode -EXCEPTS-> Policy`` and ``ExceptionNode -EXCEPTS-> Service`` (the policy
excepted, and for which service), ``MemoryNode -PART_OF-> PullRequest`` (the review it
came from), ``MemoryNode -MENTIONS|WHY-> Service``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import yaml

from substrate.graph.records import EdgeRecord, NodeRecord

ONTOLOGY_PATH = Path(__file__).resolve().parent.parent / "ontology.yaml"
_NODE_KEYS = {"kind", "label", "ceid", "props", "confidence", "provenance"}
_EDGE_KEYS = {"kind", "type", "src", "dst", "evidence_ref", "confidence", "weight", "source",
              "props"}  # fmt: skip


@cache
def _ontology() -> tuple[dict[str, dict[str, Any]], frozenset[str]]:
    data = yaml.safe_load(ONTOLOGY_PATH.read_text())
    return dict(data["labels"]), frozenset(data["relationships"])


def _confidence(obj: dict[str, Any]) -> float:
    value = obj.get("confidence", 1.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ValueError(f"confidence must be a number in (0, 1], got {value!r}")
    return float(value)


def _props(obj: dict[str, Any]) -> dict[str, Any]:
    props = obj.get("props", {})
    if not isinstance(props, dict):
        raise ValueError("props must be an object")
    return props


def _check_keys(obj: dict[str, Any], allowed: set[str]) -> None:
    if obj.keys() <= allowed:
        return
    raise ValueError(f"unknown keys {sorted(set(obj) - allowed)}")


def _string(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key} must be a non-empty string")
    return value


def parse_node(obj: dict[str, Any]) -> NodeRecord:
    _check_keys(obj, _NODE_KEYS)
    labels, _ = _ontology()
    label, cid, props = _string(obj, "label"), _string(obj, "ceid"), _props(obj)
    if label not in labels:
        raise ValueError(f"unknown label {label!r}")
    prefix = labels[label]["ceid_prefix"]
    if not cid.startswith(f"{prefix}:") or cid == f"{prefix}:":
        raise ValueError(f"ceid {cid!r} of a {label} must start with {prefix!r}:")
    for required in labels[label].get("required", []):
        if props.get(required) in (None, ""):
            raise ValueError(f"{label} {cid} lacks required prop {required!r}")
    provenance = obj.get("provenance", [])
    if not isinstance(provenance, list) or not all(isinstance(p, str) for p in provenance):
        raise ValueError("provenance must be a list of strings")
    return NodeRecord(cid, label, props, tuple(provenance), _confidence(obj))


def parse_edge(obj: dict[str, Any], default_source: str = "jsonl") -> EdgeRecord:
    _check_keys(obj, _EDGE_KEYS)
    _, types = _ontology()
    kind = _string(obj, "type")
    if kind not in types:
        raise ValueError(f"unknown relationship type {kind!r}")
    weight = obj.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise ValueError(f"weight must be a number, got {weight!r}")
    source = obj.get("source", default_source)
    if not isinstance(source, str):
        raise ValueError("source must be a string")
    return EdgeRecord(
        kind, _string(obj, "src"), _string(obj, "dst"), _string(obj, "evidence_ref"),
        _confidence(obj), float(weight), source, _props(obj),
    )  # fmt: skip


def parse_record(text: str, default_source: str = "jsonl") -> NodeRecord | EdgeRecord:
    """One JSONL line as a record (``ValueError`` without a line number); an edge without
    a ``source`` gets ``default_source``."""
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise ValueError(f"invalid JSON: {e.msg}") from e
    if not isinstance(obj, dict):
        raise ValueError("a record must be a JSON object")
    kind = obj.get("kind")
    if kind == "node":
        return parse_node(obj)
    if kind == "edge":
        return parse_edge(obj, default_source)
    raise ValueError(f"kind must be 'node' or 'edge', got {kind!r}")


def parse_jsonl_lines(lines: Iterable[str]) -> Iterator[tuple[int, NodeRecord | EdgeRecord]]:
    """``(line number, record)`` for every non-blank line; ``ValueError("line n: ...")``."""
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            record = parse_record(text)
        except ValueError as e:
            raise ValueError(f"line {number}: {e}") from e
        yield number, record


def read_jsonl(path: Path | str) -> list[NodeRecord | EdgeRecord]:
    """Every record of a JSONL file (``ValueError`` naming the file and line)."""
    with open(path, encoding="utf-8") as handle:
        try:
            return [record for _, record in parse_jsonl_lines(handle)]
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from e
