"""A batch too large for one Neo4j transaction, committed in parts that fit.

The writer refuses a batch whose transaction would not fit ``db.memory.transaction.max``
with :class:`~substrate.errors.BatchTooLarge` (:mod:`substrate.graph.tx_budget`) before it
writes anything. A caller that may turn one batch into several snapshots commits it through
:func:`commit_fitting`: the nodes first, then the edges (every edge's ends are then in the
graph), each halved until it fits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from substrate.errors import BatchTooLarge, ValidationFailed
from substrate.graph.records import GraphBatch, NodeRecord
from substrate.graph.writer import CommitResult

LineHook = Callable[[ValidationFailed, list[int], list[int]], None]


@dataclass
class Part:
    """Records of a batch committed as one snapshot, with their line numbers. ``doubtful``:
    the whole batch's nodes below confidence 1, by id, with their lines (see ``commit``)."""

    batch: GraphBatch
    node_lines: list[int]
    edge_lines: list[int]
    doubtful: dict[str, tuple[NodeRecord, int]] = field(default_factory=dict)

    @classmethod
    def of(cls, batch: GraphBatch, node_lines: list[int] | None = None,
           edge_lines: list[int] | None = None) -> Part:
        """A whole batch; without line numbers its records' positions stand for them."""
        node_lines = list(range(len(batch.nodes))) if node_lines is None else node_lines
        edge_lines = list(range(len(batch.edges))) if edge_lines is None else edge_lines
        doubtful = {n.ceid: (n, line) for n, line in zip(batch.nodes, node_lines, strict=True)
                    if n.confidence < 1}
        return cls(batch, node_lines, edge_lines, doubtful)

    def commit(self) -> tuple[GraphBatch, list[int], list[int]]:
        """What to commit, with line numbers: the part's records, and with its edges the
        batch's doubtful nodes they touch but the part does not hold. A node under the
        verification threshold is queued with the edges that touch it (the writer decides per
        commit); committed again, a node above it changes nothing."""
        if not self.doubtful or not self.batch.edges:  # the usual batch: as it is
            return self.batch, self.node_lines, self.edge_lines
        own = {n.ceid for n in self.batch.nodes}
        extra = {c: self.doubtful[c] for e in self.batch.edges for c in (e.src, e.dst)
                 if c in self.doubtful and c not in own}
        nodes = self.batch.nodes + [n for n, _ in extra.values()]
        lines = self.node_lines + [line for _, line in extra.values()]
        return GraphBatch(nodes, self.batch.edges, self.batch.pending), lines, self.edge_lines

    def halves(self) -> tuple[Part, Part] | None:
        """Two parts that commit what this one does: its nodes, then its edges (every edge's
        ends are then in the graph before it); one kind only: its first and second half.
        None for a single record."""
        b, doubtful = self.batch, self.doubtful
        if b.nodes and b.edges:
            return (Part(GraphBatch(b.nodes, [], b.pending), self.node_lines, [], doubtful),
                    Part(GraphBatch([], b.edges), [], self.edge_lines, doubtful))
        if len(b.nodes) > 1:
            h, lines = len(b.nodes) // 2, self.node_lines
            return (Part(GraphBatch(b.nodes[:h], [], b.pending), lines[:h], [], doubtful),
                    Part(GraphBatch(b.nodes[h:], []), lines[h:], [], doubtful))
        if len(b.edges) > 1:
            h, lines = len(b.edges) // 2, self.edge_lines
            return (Part(GraphBatch([], b.edges[:h], b.pending), [], lines[:h], doubtful),
                    Part(GraphBatch([], b.edges[h:]), [], lines[h:], doubtful))
        return None


def commit_fitting(commit: Callable[[GraphBatch], CommitResult], part: Part,
                   on_invalid: LineHook | None = None) -> list[tuple[CommitResult, str]]:
    """Commit ``part``; when it would not fit one Neo4j transaction, in smaller parts (each
    its own snapshot). Returns (result, note) per snapshot; a note says why it was split.
    ``on_invalid``: given a part's validation error with its node and edge line numbers."""
    batch, node_lines, edge_lines = part.commit()
    try:
        return [(commit(batch), "")]
    except ValidationFailed as exc:
        if on_invalid is not None:
            on_invalid(exc, node_lines, edge_lines)
        raise
    except BatchTooLarge:
        halves = part.halves()
        if halves is None:
            raise
        first, second = halves
        lines = sorted(part.node_lines + part.edge_lines)
        note = (f" (lines {lines[0]}-{lines[-1]} committed in parts: too large for one Neo4j "
                "transaction)")
        done = (commit_fitting(commit, first, on_invalid)
                + commit_fitting(commit, second, on_invalid))
        return [(r, note) for r, _ in done]  # the outermost split names the whole batch
