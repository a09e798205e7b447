"""Will a snapshot fit one Neo4j transaction, and how a batch that would not is split
(``substrate.graph.fitting``, used by the JSONL import and the git connector). Pure logic:
the real refusal and the split against the stack are in tests/integration/test_jsonl_ingest.py
and test_git_connector.py."""

from __future__ import annotations

import pytest
from neo4j.exceptions import Neo4jError

from substrate.connectors.jsonl_ingest import _with_line_numbers
from substrate.errors import BatchTooLarge, ValidationFailed
from substrate.graph import tx_budget
from substrate.graph.diff import ChangeSet
from substrate.graph.fitting import Part, commit_fitting
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import CommitResult

MIB = 1024 * 1024


def node(i: int, text: str = "") -> NodeRecord:
    props = {"name": f"s{i}", **({"summary": text} if text else {})}
    return NodeRecord(f"service:s{i}", "Service", props)


def edge(a: int, b: int) -> EdgeRecord:
    return EdgeRecord("CALLS", f"service:s{a}", f"service:s{b}", f"apm:s{a}->s{b}")


def changes(nodes: int = 0, edges: int = 0, text: str = "") -> ChangeSet:
    return ChangeSet(node_adds=[node(i, text) for i in range(nodes)],
                     edge_adds=[(f"k{i}", edge(i, i + 1)) for i in range(edges)])


@pytest.mark.parametrize(("size", "expected"), [
    ("256m", 256 * MIB), ("1g", 1024 * MIB), ("1G", 1024 * MIB), ("512k", 512 * 1024),
    ("4096", 4096), ("0", None), (" 2m ", 2 * MIB),
])
def test_neo4j_memory_sizes_in_bytes(size: str, expected: int | None) -> None:
    assert tx_budget.limit_bytes(size) == expected


@pytest.mark.parametrize("size", ["", "m", "1.5g", "-1m", "12mb"])
def test_a_bad_memory_size_is_refused(size: str) -> None:
    with pytest.raises(ValueError, match="not a Neo4j memory size"):
        tx_budget.limit_bytes(size)


def test_the_estimate_grows_with_elements_text_and_vectors() -> None:
    base = tx_budget.estimate(changes(nodes=100))
    assert base >= 100 * tx_budget.BYTES_PER_ELEMENT
    assert tx_budget.estimate(changes(nodes=100, edges=100)) > base
    assert tx_budget.estimate(changes(nodes=100, text="x" * 1000)) >= \
        base + 100 * 1000 * tx_budget.BYTES_PER_CHAR
    assert tx_budget.estimate(changes(nodes=100), vectors=100, dimensions=384) == \
        base + 100 * 384 * tx_budget.BYTES_PER_VECTOR_DIM
    closes = ChangeSet(node_closes=[("service:a", {})], edge_closes=[("k", {})])
    assert tx_budget.estimate(closes) == 2 * tx_budget.BYTES_PER_ELEMENT


def test_the_scale_loads_batches_fit_the_default_limit() -> None:
    # 20k records of the scale generator's shape peaked at ~156 MiB: the default batch size
    # must not be split under the default 256m
    limit = tx_budget.limit_bytes("256m")
    tx_budget.check(changes(nodes=4000, edges=16000), limit)


def test_a_write_over_the_budget_is_refused_with_its_figures() -> None:
    limit = 10 * MIB
    fits = int(limit * tx_budget.HEADROOM) // tx_budget.BYTES_PER_ELEMENT // 2
    tx_budget.check(changes(nodes=fits // 2), limit)
    with pytest.raises(BatchTooLarge) as info:
        tx_budget.check(changes(nodes=fits, edges=fits), limit)
    assert info.value.status == 413 and info.value.code == "batch_too_large"
    detail = info.value.detail
    assert detail["limit_bytes"] == limit and detail["nodes"] == fits
    assert detail["estimated_bytes"] > detail["budget_bytes"] == int(limit * 0.75)
    assert "NEO4J_TX_MEMORY" in info.value.message
    tx_budget.check(changes(nodes=10 * fits), None)  # 0 (unlimited): never refused


def test_neo4j_s_memory_refusal_is_recognised() -> None:
    refusal = Neo4jError._hydrate_neo4j(
        code="Neo.TransientError.General.MemoryPoolOutOfMemoryError", message="over")
    deadlock = Neo4jError._hydrate_neo4j(
        code="Neo.TransientError.Transaction.DeadlockDetected", message="deadlock")
    assert tx_budget.is_memory_refusal(refusal)
    assert not tx_budget.is_memory_refusal(deadlock)
    assert not tx_budget.is_memory_refusal(ValueError("x"))


# --- the JSONL import's split ----------------------------------------------------------------
def part(nodes: int, edges: int) -> Part:
    return Part.of(GraphBatch([node(i) for i in range(nodes)],
                               [edge(i, i + 1) for i in range(edges)]),
                    list(range(1, nodes + 1)), list(range(nodes + 1, nodes + edges + 1)))


def test_a_part_splits_into_its_nodes_then_its_edges_then_halves() -> None:
    first, second = part(3, 4).halves() or pytest.fail("no split")
    assert (len(first.batch.nodes), len(first.batch.edges), first.node_lines) == (3, 0, [1, 2, 3])
    assert (len(second.batch.nodes), second.edge_lines) == (0, [4, 5, 6, 7])
    low, high = second.halves() or pytest.fail("no split")
    assert (low.edge_lines, high.edge_lines) == ([4, 5], [6, 7])
    assert [e.src for e in low.batch.edges + high.batch.edges] == \
        [e.src for e in second.batch.edges]
    assert part(1, 0).halves() is None and part(0, 1).halves() is None


def committer(max_records: int, log: list[GraphBatch]):  # type: ignore[no-untyped-def]
    """A commit that refuses batches of more than ``max_records`` records."""
    def commit(batch: GraphBatch) -> CommitResult:
        if len(batch.nodes) + len(batch.edges) > max_records:
            raise BatchTooLarge("too large", {"estimated_bytes": 1})
        log.append(batch)
        return CommitResult(len(log), "hash")
    return commit


def test_a_refused_batch_is_committed_in_order_in_parts_that_fit() -> None:
    log: list[GraphBatch] = []
    done = commit_fitting(committer(3, log), part(4, 5))
    assert [r.snapshot_version for r, _ in done] == [1, 2, 3, 4]
    assert [(len(b.nodes), len(b.edges)) for b in log] == [(2, 0), (2, 0), (0, 2), (0, 3)]
    assert all("lines 1-9 committed in parts" in note for _, note in done)
    assert [r for r, note in commit_fitting(committer(9, []), part(4, 5)) if note] == []


def test_a_record_that_never_fits_is_refused() -> None:
    with pytest.raises(BatchTooLarge):
        commit_fitting(committer(0, []), part(2, 0))


def test_a_part_s_validation_error_names_the_file_s_lines() -> None:
    def commit(batch: GraphBatch) -> CommitResult:
        if len(batch.edges) > 2:
            raise BatchTooLarge("too large", {})
        raise ValidationFailed("bad", [{"record": "service:s1-[CALLS]->service:s2",
                                        "reason": "x", "position": 0}])
    with pytest.raises(ValidationFailed) as info:  # the first half: edge lines 5 and 6
        commit_fitting(commit, part(4, 4).halves()[1], _with_line_numbers)  # type: ignore[index]
    assert info.value.detail[0]["line"] == 5 and "lines 5" in info.value.message


def test_an_edge_part_carries_the_doubtful_nodes_its_edges_touch() -> None:
    unsure = NodeRecord("service:s1", "Service", {"name": "s1"}, confidence=0.5)
    batch = GraphBatch([node(0), unsure, node(2)], [edge(0, 1), edge(0, 2), edge(2, 0)])
    whole = Part.of(batch, [1, 2, 3], [4, 5, 6])
    assert whole.commit()[0].nodes == batch.nodes  # unsplit: nothing added
    nodes_part, edges_part = whole.halves() or pytest.fail("no split")
    assert nodes_part.commit()[0].nodes == batch.nodes
    committed, node_lines, edge_lines = edges_part.commit()
    assert committed.nodes == [unsure] and node_lines == [2] and edge_lines == [4, 5, 6]
    low, high = edges_part.halves() or pytest.fail("no split")
    assert low.commit()[0].nodes == [unsure]  # s0 -> s1 is in the first half
    assert high.commit()[0].nodes == []  # s0 -> s2, s2 -> s0: no doubtful end
