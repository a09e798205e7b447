"""Line-aware reading of YAML: work on ``yaml.compose`` nodes so every value knows its line.

Values stay as the raw scalar strings of the file (no type coercion), which is what manifests
need (``"8080"`` and ``8080`` are the same port, ``on`` is not a boolean in an env value).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode


@dataclass(frozen=True)
class Fact:
    """A value read from a file, with where it was read: ``path`` and 1-based ``line``."""

    value: str
    path: str
    line: int


def compose_all(text: str) -> list[Node]:
    """Every document of a (multi-document) YAML text; ``[]`` when it does not parse.
    Memoised by text: a history replay reads the same unchanged manifests at every commit
    (the nodes are only read, never changed, by the callers)."""
    return list(_compose_all(text))


# libyaml's parser when PyYAML has it (~13x faster; the same nodes, values and lines: checked
# on every YAML blob of the devset histories, 4,918 of them, invalid ones included)
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=4096)
def _compose_all(text: str) -> tuple[Node, ...]:
    try:
        return tuple(d for d in yaml.compose_all(text, Loader=LOADER) if d is not None)
    except yaml.YAMLError:
        return ()


def line_of(node: Node) -> int:
    """1-based line where ``node`` starts."""
    return int(node.start_mark.line) + 1


def scalar(node: Node | None) -> str | None:
    """The raw text of a scalar node, ``None`` for anything else."""
    if isinstance(node, ScalarNode):
        return str(node.value)
    return None


def pairs(node: Node | None) -> list[tuple[ScalarNode, Node]]:
    """Key/value node pairs of a mapping (merge keys ``<<`` are expanded, own keys win)."""
    if not isinstance(node, MappingNode):
        return []
    own: list[tuple[ScalarNode, Node]] = []
    merged: list[tuple[ScalarNode, Node]] = []
    for key, value in node.value:
        if not isinstance(key, ScalarNode):
            continue
        if key.value == "<<":
            sources = value.value if isinstance(value, SequenceNode) else [value]
            for src in sources:
                merged.extend(pairs(src))
        else:
            own.append((key, value))
    names = {k.value for k, _ in own}
    return own + [(k, v) for k, v in merged if k.value not in names]


def get(node: Node | None, key: str) -> Node | None:
    """Value node of ``key`` in a mapping node, or ``None``."""
    for k, v in pairs(node):
        if k.value == key:
            return v
    return None


def path_get(node: Node | None, *keys: str) -> Node | None:
    """``get`` along a path of keys."""
    for key in keys:
        node = get(node, key)
    return node


def items(node: Node | None) -> list[Node]:
    """Items of a sequence node (``[]`` for anything else)."""
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def fact(node: Node | None, path: str) -> Fact | None:
    """A scalar node as a :class:`Fact`."""
    text = scalar(node)
    if node is None or text is None:
        return None
    return Fact(text, path, line_of(node))


def string_map(node: Node | None) -> dict[str, str]:
    """A mapping of scalars as a plain dict (labels, selectors)."""
    out: dict[str, str] = {}
    for k, v in pairs(node):
        text = scalar(v)
        if text is not None:
            out[str(k.value)] = text
    return out
