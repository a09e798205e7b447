"""Will one snapshot's Neo4j transaction fit ``db.memory.transaction.max``?

A snapshot is one Neo4j transaction, and Neo4j refuses a transaction whose memory goes over
``db.memory.transaction.max`` (``NEO4J_TX_MEMORY``, 256m by default) with a
``MemoryPoolOutOfMemoryError`` — after the driver has retried it. The writer estimates the
transaction's memory from its change set before it writes anything, and refuses a batch that
would not fit with :class:`~substrate.errors.BatchTooLarge` (a caller that chose the batch,
such as the JSONL import, then commits it in parts).

The estimate is linear, from peaks measured on Neo4j 5.26 (``SHOW TRANSACTIONS``'
``estimatedUsedHeapMemory`` polled while the writer committed, 2026-11-24): 20,000 new nodes
with three short properties peaked at 152 MiB, 20,000 new edges at 127 MiB, 2,000 nodes with
8 KiB of text at 72 MiB and 500 with 64 KiB at 118 MiB (~3.6 bytes of transaction memory
per character of text beyond the per-element cost).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from substrate.errors import BatchTooLarge
from substrate.graph import diff as d
from substrate.graph.records import EdgeRecord, NodeRecord
from substrate.settings import memory_bytes

BYTES_PER_ELEMENT = 8 * 1024  # a node or edge written, with its index updates
BYTES_PER_CHAR = 4  # text in its properties
BYTES_PER_VECTOR_DIM = 16  # an embedding's components (parameters, then a float array)
HEADROOM = 0.75  # of the limit: the estimate is a model, and other work shares the pool


def limit_bytes(size: str) -> int | None:
    """A Neo4j memory setting (``256m``, ``1g``, ``0``) in bytes; None when unlimited (0)."""
    return memory_bytes(size.strip()) or None


def _chars(values: Iterable[Any]) -> int:
    total = 0
    for value in values:
        if isinstance(value, str):
            total += len(value)
        elif isinstance(value, list | tuple):
            total += _chars(value)
    return total


def _node_chars(node: NodeRecord) -> int:
    return _chars(node.props.values()) + _chars(node.provenance) + len(node.ceid)


def _edge_chars(edge: EdgeRecord) -> int:
    return (len(edge.src) + len(edge.type) + len(edge.dst) + len(edge.evidence_ref)
            + _chars(edge.props.values()))


def estimate(changes: d.ChangeSet, vectors: int = 0, dimensions: int = 0) -> int:
    """Bytes of transaction memory the write of ``changes`` needs, with ``vectors``
    embeddings of ``dimensions`` components."""
    nodes = [*changes.node_adds, *(n for n, _ in changes.node_updates)]
    elements = (len(nodes) + len(changes.node_closes) + len(changes.node_source_drops)
                + len(changes.edge_adds) + len(changes.edge_closes))
    chars = sum(_node_chars(n) for n in nodes) + sum(_edge_chars(e) for _, e in
                                                     changes.edge_adds)
    return (elements * BYTES_PER_ELEMENT + chars * BYTES_PER_CHAR
            + vectors * dimensions * BYTES_PER_VECTOR_DIM)


def check(changes: d.ChangeSet, limit: int | None, vectors: int = 0,
          dimensions: int = 0) -> None:
    """Raise :class:`BatchTooLarge` when the write would not fit ``limit`` bytes (with
    :data:`HEADROOM`); ``limit`` None: no limit."""
    if limit is None:
        return
    needed = estimate(changes, vectors, dimensions)
    budget = int(limit * HEADROOM)
    if needed > budget:
        mib = 1024 * 1024
        raise BatchTooLarge(
            f"the batch needs ~{needed // mib} MiB of Neo4j transaction memory, more than "
            f"{budget // mib} MiB of db.memory.transaction.max ({limit // mib} MiB, "
            "NEO4J_TX_MEMORY): commit it in smaller batches",
            {"estimated_bytes": needed, "budget_bytes": budget, "limit_bytes": limit,
             "nodes": len(changes.node_adds) + len(changes.node_updates),
             "edges": len(changes.edge_adds)})


def is_memory_refusal(exc: BaseException) -> bool:
    """Neo4j refused the transaction for its memory (per transaction or all together)."""
    return getattr(exc, "code", None) == "Neo.TransientError.General.MemoryPoolOutOfMemoryError"
