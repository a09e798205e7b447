"""JSONL bulk import against the real stack: streamed in batches (one snapshot each), every
error names its line, resumable after a crash without duplicate snapshots."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from neo4j import Driver

from substrate.connectors.jsonl_ingest import JsonlFile, ingest_jsonl, ingest_jsonl_files
from substrate.errors import BatchTooLarge, ValidationFailed
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from tests.support.graphstate import (
    drop_tenant_graph,
    element_counts,
    live_edge,
    new_tenant,
    snapshot_versions,
)

pytestmark = pytest.mark.integration


def node_line(name: str) -> str:
    return json.dumps({"kind": "node", "label": "Service", "ceid": f"service:{name}",
                       "props": {"name": name}})


def edge_line(a: str, b: str, **extra: Any) -> str:
    obj = {"kind": "edge", "type": "CALLS", "src": f"service:{a}", "dst": f"service:{b}",
           "evidence_ref": f"apm:{a}->{b}", **extra}
    return json.dumps(obj)


def chain(n: int) -> list[str]:
    """``n`` service nodes then ``n - 1`` CALLS edges s0 -> s1 -> ... (2n - 1 lines)."""
    names = [f"s{i:02d}" for i in range(n)]
    edges = [edge_line(a, b) for a, b in zip(names, names[1:], strict=False)]
    return [node_line(x) for x in names] + edges


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def tenant(driver: Driver) -> Iterator[str]:
    name = new_tenant("jsonl")
    yield name
    drop_tenant_graph(driver, name)


@pytest.fixture(scope="module")
def writer(stack: Settings, driver: Driver) -> GraphWriter:
    return GraphWriter(stack, driver)


def position(pg: psycopg.Connection[Any], tenant: str) -> list[int]:
    rows = pg.execute("SELECT position FROM ingest_progress WHERE tenant_id = %s",
                      (tenant,)).fetchall()
    return [int(r[0]) for r in rows]


class Crash(Exception):
    """Stands for the process dying right after a batch was committed."""


def crash_after(batches: int, log: list[str]) -> Any:
    def progress(message: str) -> None:
        log.append(message)
        if sum("through line" in m for m in log) == batches:
            raise Crash(message)
    return progress


def test_batches_are_streamed_one_snapshot_each(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any], tenant: str,
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "org.jsonl", chain(15) + ["{not json"])  # 29 records, bad line 30
    log: list[str] = []
    with pytest.raises(ValidationFailed) as info:
        ingest_jsonl(writer, path, tenant=tenant, batch_size=10, progress=log.append)
    # the batches before the bad line were committed before it was read: the file streams
    assert log == [f"[jsonl] org.jsonl: through line {n}, snapshot {v}"
                   for n, v in zip((10, 20), snapshot_versions(pg, tenant), strict=True)]
    assert info.value.detail[0]["line"] == 30 and "line 30" in info.value.message
    assert position(pg, tenant) == [20]
    assert element_counts(driver, tenant) == (15, 5)


def test_every_error_names_its_line(
    writer: GraphWriter, pg: psycopg.Connection[Any], tenant: str, tmp_path: Path
) -> None:
    no_evidence = write(tmp_path / "a.jsonl", [node_line("a"), node_line("b"), "",
                                               edge_line("a", "b", evidence_ref="")])
    with pytest.raises(ValidationFailed) as info:
        ingest_jsonl(writer, no_evidence, tenant=tenant, progress=lambda m: None)
    assert info.value.detail[0]["line"] == 4
    assert "evidence_ref must be a non-empty string" in info.value.message
    # problems found by the write path (after a queued low-confidence edge) name their lines
    lines = [node_line("a"), node_line("b"), edge_line("a", "b", confidence=0.5),
             edge_line("a", "ghost"), node_line("c"), edge_line("c", "phantom")]
    unknown = write(tmp_path / "b.jsonl", lines)
    with pytest.raises(ValidationFailed) as info:
        ingest_jsonl(writer, unknown, tenant=tenant, progress=lambda m: None)
    assert [(p["line"], p["reason"]) for p in info.value.detail] == [
        (4, "endpoint 'service:ghost' is neither in the batch nor in the graph"),
        (6, "endpoint 'service:phantom' is neither in the batch nor in the graph"),
    ]
    assert "(lines 4, 6)" in info.value.message
    assert snapshot_versions(pg, tenant) == []


def test_resumes_after_a_crash_without_duplicate_snapshots(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any], tenant: str,
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "big.jsonl", chain(20))  # 39 lines
    log: list[str] = []
    with pytest.raises(Crash):
        ingest_jsonl(writer, path, tenant=tenant, batch_size=8, progress=crash_after(2, log))
    assert position(pg, tenant) == [16] and len(snapshot_versions(pg, tenant)) == 2
    log.clear()
    rest = ingest_jsonl(writer, path, tenant=tenant, batch_size=8, progress=log.append)
    assert log[0] == "[jsonl] resuming big.jsonl after line 16"
    assert [m.split(",")[0] for m in log[1:]] == [
        f"[jsonl] big.jsonl: through line {n}" for n in (24, 32, 39)]
    assert len(rest) == 3 and all(r.snapshot_version for r in rest)
    assert len(snapshot_versions(pg, tenant)) == 5 and position(pg, tenant) == [39]
    assert element_counts(driver, tenant) == (20, 19)
    assert ingest_jsonl(writer, path, tenant=tenant, batch_size=8, progress=log.append) == []
    again = ingest_jsonl(writer, path, tenant=tenant, batch_size=8, resume=False,
                         progress=log.append)
    assert len(again) == 5 and all(r.snapshot_version is None for r in again)
    assert len(snapshot_versions(pg, tenant)) == 5


def snapshot_rows(pg: psycopg.Connection[Any], tenant: str) -> list[tuple[str, datetime]]:
    return [(str(r[0]), r[1]) for r in pg.execute(
        "SELECT source, valid_at FROM snapshots WHERE tenant_id = %s ORDER BY version",
        (tenant,)).fetchall()]


def test_several_files_in_order_each_with_its_source_date_and_position(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any], tenant: str,
    tmp_path: Path,
) -> None:
    """One import of two files: each file's snapshots carry its own source and date; the
    second file's edges reach the first file's nodes; a crash in the second file resumes it
    after its last committed batch and leaves the first alone."""
    first = write(tmp_path / "a.jsonl", chain(6))  # s00..s05 and 5 edges: 11 lines
    second = write(tmp_path / "b.jsonl", [node_line("t0"), node_line("t1"),
                                          edge_line("s00", "t0"), edge_line("t0", "t1"),
                                          edge_line("s05", "t1"), edge_line("t1", "s01")])
    day_a, day_b = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC)
    files = [JsonlFile(first, day_a), JsonlFile(second, day_b)]
    log: list[str] = []
    with pytest.raises(Crash):  # a.jsonl: lines 8, 11; b.jsonl: line 4, then the crash
        ingest_jsonl_files(writer, files, tenant=tenant, batch_size=4,
                           progress=crash_after(4, log))
    assert [m.split(",")[0] for m in log] == [
        "[jsonl] a.jsonl: through line 4", "[jsonl] a.jsonl: through line 8",
        "[jsonl] a.jsonl: through line 11", "[jsonl] b.jsonl: through line 4"]
    assert sorted(position(pg, tenant)) == [4, 11]
    log.clear()
    rest = ingest_jsonl_files(writer, files, tenant=tenant, batch_size=4, progress=log.append)
    assert log[0] == "[jsonl] resuming a.jsonl after line 11"
    assert log[1] == "[jsonl] resuming b.jsonl after line 4"
    assert [m.split(",")[0] for m in log[2:]] == ["[jsonl] b.jsonl: through line 6"]
    assert len(rest) == 1 and rest[0].snapshot_version is not None
    assert snapshot_rows(pg, tenant) == [("jsonl:a.jsonl", day_a)] * 3 + [
        ("jsonl:b.jsonl", day_b)] * 2
    assert element_counts(driver, tenant) == (8, 9)
    assert live_edge(driver, tenant, "service:t1-[CALLS]->service:s01@jsonl:b.jsonl")
    assert sorted(position(pg, tenant)) == [6, 11]


def test_a_fixed_file_goes_on_without_duplicate_snapshots(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any], tenant: str,
    tmp_path: Path,
) -> None:
    lines = chain(20)
    broken = lines[:22] + [edge_line("s02", "s03", evidence_ref=" ")] + lines[23:]
    path = write(tmp_path / "fix.jsonl", broken)
    for _ in range(2):  # the same failure again: resumes after line 16, names line 23 again
        with pytest.raises(ValidationFailed) as info:
            ingest_jsonl(writer, path, tenant=tenant, batch_size=8, progress=lambda m: None)
        assert info.value.detail[0]["line"] == 23
        assert len(snapshot_versions(pg, tenant)) == 2 and position(pg, tenant) == [16]
    write(path, lines)
    results = ingest_jsonl(writer, path, tenant=tenant, batch_size=8, progress=lambda m: None)
    assert [r.snapshot_version is None for r in results] == [True, True, False, False, False]
    assert len(snapshot_versions(pg, tenant)) == 5
    assert live_edge(driver, tenant, "service:s02-[CALLS]->service:s03@jsonl:fix.jsonl")
    assert element_counts(driver, tenant) == (20, 19)


def test_a_batch_too_large_for_one_transaction_is_committed_in_parts(
    stack: Settings, driver: Driver, pg: psycopg.Connection[Any], tenant: str,
    tmp_path: Path,
) -> None:
    # NEO4J_TX_MEMORY of 1 MiB as the writer sees it (the server keeps its own): 119 records
    # are estimated above its 0.75 MiB budget, the nodes alone and the edges alone below it
    small = GraphWriter(replace(stack, neo4j_tx_memory="1m"), driver)
    path = write(tmp_path / "org.jsonl", chain(60))
    log: list[str] = []
    results = ingest_jsonl(small, path, tenant=tenant, batch_size=200, progress=log.append)
    versions = snapshot_versions(pg, tenant)
    assert [r.snapshot_version for r in results] == versions and len(versions) == 2
    assert [r.counts["nodes_added"] for r in results] == [60, 0]  # nodes first, then edges
    assert [r.counts["edges_added"] for r in results] == [0, 59]
    assert log == [f"[jsonl] org.jsonl: through line 119, snapshot {v} (lines 1-119 committed "
                   "in parts: too large for one Neo4j transaction)" for v in versions]
    assert element_counts(driver, tenant) == (60, 59)
    assert position(pg, tenant) == [119]


def test_a_record_too_large_for_one_transaction_is_refused_with_nothing_written(
    stack: Settings, driver: Driver, pg: psycopg.Connection[Any], tenant: str,
    tmp_path: Path,
) -> None:
    small = GraphWriter(replace(stack, neo4j_tx_memory="1m"), driver)
    big = json.dumps({"kind": "node", "label": "Service", "ceid": "service:big",
                      "props": {"name": "big", "summary": "x" * 300_000}})
    path = write(tmp_path / "org.jsonl", [big])
    with pytest.raises(BatchTooLarge) as info:
        ingest_jsonl(small, path, tenant=tenant, progress=lambda _m: None)
    assert info.value.status == 413 and info.value.to_dict()["error"]["code"] == "batch_too_large"
    assert info.value.detail["estimated_bytes"] > info.value.detail["budget_bytes"]
    assert element_counts(driver, tenant) == (0, 0)
    assert snapshot_versions(pg, tenant) == [] and position(pg, tenant) == []


def test_a_split_batch_queues_a_doubtful_node_with_its_edges_as_a_whole_one_does(
    stack: Settings, driver: Driver, pg: psycopg.Connection[Any], tenant: str,
    tmp_path: Path,
) -> None:
    # s05 is under VERIFY_THRESHOLD: it waits for a reviewer, and so do the edges touching it.
    # Split (nodes, then edges), the edges' part carries s05 again so that they are queued
    # with it instead of being refused as dangling
    lines = chain(60)
    record = json.loads(lines[5])
    lines[5] = json.dumps({**record, "confidence": 0.5})
    small = GraphWriter(replace(stack, neo4j_tx_memory="1m"), driver)
    results = ingest_jsonl(small, write(tmp_path / "org.jsonl", lines), tenant=tenant,
                           batch_size=200, progress=lambda _m: None)
    assert len(results) == 2
    assert element_counts(driver, tenant) == (59, 57)
    queued = pg.execute("SELECT kind, record->>'ceid', record->>'src', record->>'dst' "
                        "FROM verification_queue WHERE tenant_id = %s ORDER BY id",
                        (tenant,)).fetchall()
    assert sorted(queued, key=str) == sorted([
        ("node", "service:s05", None, None),
        ("edge", None, "service:s04", "service:s05"),
        ("edge", None, "service:s05", "service:s06")], key=str)
