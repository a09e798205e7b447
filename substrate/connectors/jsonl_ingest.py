"""Streaming, batched, resumable JSONL import (the general contract; see jsonl_format)."""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, cast

import psycopg

from substrate.connectors.jsonl_format import parse_record
from substrate.errors import ValidationFailed
from substrate.graph.fitting import Part, commit_fitting
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import CommitResult, GraphWriter, WriteSession
from substrate.observability.metrics import observe_ingest
from substrate.observability.progress import Bar, advance, set_total

Progress = Callable[[str], None]
# a file's batches are committed in sessions of the writers' lock (pipelined: a snapshot is
# recorded while the next batch is diffed) of at most about this long
LOCK_HOLD_S = 10.0
# records per snapshot by default: 20k commit ~7 % faster than 5k (fewer snapshots' fixed
# costs); a batch whose transaction would not fit NEO4J_TX_MEMORY is committed in parts
BATCH_RECORDS = 20_000
T = TypeVar("T")


def _progress_key(path: Path) -> str:
    """The file and its content: a changed file starts over (re-committing what is already
    in the graph makes no new snapshot). Hashed in blocks, never read whole."""
    with path.open("rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    return f"jsonl:{path.resolve()}:{digest[:16]}"


def _read_position(dsn: str, tenant: str, key: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT position FROM ingest_progress WHERE tenant_id = %s AND source = %s",
            (tenant, key),
        ).fetchone()
    return int(row[0]) if row else 0


def _save_position(dsn: str, tenant: str, key: str, line: int) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "INSERT INTO ingest_progress (tenant_id, source, position) VALUES (%s, %s, %s) "
            "ON CONFLICT (tenant_id, source) DO UPDATE SET position = EXCLUDED.position, "
            "updated_at = now()",
            (tenant, key, line),
        )


def _records(path: Path, start_after: int, source: str
             ) -> Iterator[tuple[int, NodeRecord | EdgeRecord]]:
    """``(line number, record)`` after line ``start_after``, one line at a time; a bad line
    is a ValidationFailed naming it. Edges get ``source`` unless they name one (the commit
    gives every edge its source: then it need not copy them)."""
    with path.open(encoding="utf-8") as fh:
        for line_no, text in enumerate(fh, start=1):
            if line_no <= start_after or not text.strip():
                continue
            try:
                record = parse_record(text, source)
            except ValueError as e:
                problem = {"record": None, "reason": str(e), "position": None, "line": line_no}
                raise ValidationFailed(f"{path.name} line {line_no}: {e}", [problem]) from e
            yield line_no, record


def _batches(path: Path, start_after: int, size: int, source: str
             ) -> Iterator[tuple[GraphBatch, list[int], list[int], int]]:
    """Yield (batch, node line numbers, edge line numbers, last line) of ``size`` records."""
    batch, node_lines, edge_lines, last = GraphBatch(), [], [], start_after
    for line_no, record in _records(path, start_after, source):
        if isinstance(record, NodeRecord):
            batch.nodes.append(record)
            node_lines.append(line_no)
        else:
            batch.edges.append(record)
            edge_lines.append(line_no)
        last = line_no
        if len(batch.nodes) + len(batch.edges) >= size:
            yield batch, node_lines, edge_lines, last
            batch, node_lines, edge_lines = GraphBatch(), [], []
    if batch.nodes or batch.edges:
        yield batch, node_lines, edge_lines, last


def _prefetched(items: Iterator[T]) -> Iterator[T]:
    """``items``, each next one produced in a worker thread while the caller works on the
    current one (the next batch is parsed while this one commits). Errors arrive in order."""
    end = object()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="jsonl-parse") as pool:
        ahead = pool.submit(next, items, end)
        while (item := ahead.result()) is not end:
            ahead = pool.submit(next, items, end)
            yield cast(T, item)


def _commit_one(session: WriteSession, batch: GraphBatch, *, source: str, tenant: str,
                valid_at: datetime | None) -> CommitResult:
    return session.commit(batch, source=source, tenant=tenant, valid_at=valid_at)


def _with_line_numbers(exc: ValidationFailed, nodes: list[int], edges: list[int]) -> None:
    details: list[dict[str, Any]] = exc.detail or []
    for problem in details:
        pos = problem.get("position")
        if pos is None:
            continue
        is_edge = "-[" in str(problem.get("record", ""))
        lines = edges if is_edge else nodes
        problem["line"] = lines[pos] if pos < len(lines) else None
    bad = sorted({p["line"] for p in details if p.get("line") is not None})
    if bad:
        exc.message = f"{exc.message} (lines {', '.join(map(str, bad))})"


def ingest_jsonl(
    writer: GraphWriter, path: Path, *, source: str | None = None, tenant: str | None = None,
    batch_size: int = BATCH_RECORDS, resume: bool = True, progress: Progress = print,
    valid_at: datetime | None = None,
) -> list[CommitResult]:
    tenant = tenant or writer.settings.tenant
    source = source or f"jsonl:{path.name}"
    key = _progress_key(path)
    dsn = writer.settings.postgres_dsn
    start = _read_position(dsn, tenant, key) if resume else 0
    if start:
        progress(f"[jsonl] resuming {path.name} after line {start}")
    if isinstance(progress, Bar):
        with path.open("rb") as f:
            set_total(progress, sum(1 for _ in f))
        advance(progress, start)
    results, done = [], start
    with contextlib.ExitStack() as held:
        session, since = None, 0.0
        for batch, node_lines, edge_lines, last in _prefetched(
                _batches(path, start, batch_size, source)):
            committing = time.monotonic()
            if session is None or committing - since > LOCK_HOLD_S:
                held.close()  # other writers get their turn between sessions
                session = held.enter_context(writer.session(pipelined=True))
                since = time.monotonic()
            committed = commit_fitting(
                partial(_commit_one, session, source=source, tenant=tenant, valid_at=valid_at),
                Part.of(batch, node_lines, edge_lines), _with_line_numbers)
            seconds = time.monotonic() - committing
            for result, _ in committed:
                observe_ingest(source, result.counts, seconds / len(committed),
                               result.snapshot_version is not None)
            advance(progress, last - done)
            done = last
            _save_position(dsn, tenant, key, last)
            for result, note in committed:
                results.append(result)
                progress(f"[jsonl] {path.name}: through line {last}, "
                         f"snapshot {result.snapshot_version or 'unchanged'}{note}")
    return results
