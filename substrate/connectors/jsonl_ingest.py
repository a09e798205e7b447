"""Streaming, batched, resumable JSONL import (the general contract; see jsonl_format)."""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, cast

import psycopg

from substrate.connectors.jsonl_format import parse_record
from substrate.errors import ValidationFailed
from substrate.gc_policy import bulk_work
from substrate.graph.fitting import Part, commit_fitting
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.session_memory import SessionMemory
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


POSITION_SQL = "SELECT position FROM ingest_progress WHERE tenant_id = %s AND source = %s"
SAVE_POSITION_SQL = (
    "INSERT INTO ingest_progress (tenant_id, source, position) VALUES (%s, %s, %s) "
    "ON CONFLICT (tenant_id, source) DO UPDATE SET position = EXCLUDED.position, "
    "updated_at = now()")


def _read_position(conn: psycopg.Connection[Any], tenant: str, key: str) -> int:
    row = conn.execute(POSITION_SQL, (tenant, key)).fetchone()
    return int(row[0]) if row else 0


def _save_position(conn: psycopg.Connection[Any], tenant: str, key: str, line: int) -> None:
    conn.execute(SAVE_POSITION_SQL, (tenant, key, line))


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


def _with_next(items: Iterator[T]) -> Iterator[tuple[T, T | None]]:
    """Each item with the one after it (None for the last). An error producing the next
    item (a bad line) is raised after the current one has been handled, as it was before
    the lookahead: the batches before a bad line are committed."""
    current = next(items, None)
    while current is not None:
        try:
            following = next(items, None)
        except Exception as exc:  # noqa: BLE001 - raised again below, one item later
            yield current, None
            raise exc
        yield current, following
        current = following


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


@dataclass(frozen=True)
class JsonlFile:
    """One file of an import, and when its facts held (``None``: the commit's time)."""

    path: Path
    valid_at: datetime | None = None


@dataclass(frozen=True)
class _Plan:
    file: JsonlFile
    source: str
    key: str  # the resume position's key (the file and its content)
    start: int  # lines already committed


def _all_batches(plans: list[_Plan], size: int
                 ) -> Iterator[tuple[_Plan, GraphBatch, list[int], list[int], int]]:
    for plan in plans:
        for batch, node_lines, edge_lines, last in _batches(plan.file.path, plan.start, size,
                                                            plan.source):
            yield plan, batch, node_lines, edge_lines, last


def ingest_jsonl(
    writer: GraphWriter, path: Path, *, source: str | None = None, tenant: str | None = None,
    batch_size: int = BATCH_RECORDS, resume: bool = True, progress: Progress = print,
    valid_at: datetime | None = None,
) -> list[CommitResult]:
    """Import one file (see :func:`ingest_jsonl_files`)."""
    return ingest_jsonl_files(writer, [JsonlFile(path, valid_at)], source=source,
                              tenant=tenant, batch_size=batch_size, resume=resume,
                              progress=progress)


@bulk_work()
def ingest_jsonl_files(
    writer: GraphWriter, files: Sequence[JsonlFile], *, source: str | None = None,
    tenant: str | None = None, batch_size: int = BATCH_RECORDS, resume: bool = True,
    progress: Progress = print,
) -> list[CommitResult]:
    """Import ``files`` in order, ``batch_size`` records per snapshot, each file from its
    resume position (``resume``). The source is ``source`` or ``jsonl:<file name>``.

    The files share the writers' lock (handed back between sessions of about
    ``LOCK_HOLD_S``) and the parser thread, so a file's last snapshot is recorded while the
    next file's first batch is read and checked, instead of each file waiting for its own."""
    tenant = tenant or writer.settings.tenant
    results: list[CommitResult] = []
    with psycopg.connect(writer.settings.postgres_dsn, autocommit=True) as positions, \
            contextlib.ExitStack() as held:
        plans = []
        for f in files:
            key = _progress_key(f.path)
            start = _read_position(positions, tenant, key) if resume else 0
            if start:
                progress(f"[jsonl] resuming {f.path.name} after line {start}")
            plans.append(_Plan(f, source or f"jsonl:{f.path.name}", key, start))
        if isinstance(progress, Bar):
            set_total(progress, sum(_line_count(p.file.path) for p in plans))
            advance(progress, sum(p.start for p in plans))
        session, since, done = None, 0.0, {p.key: p.start for p in plans}
        memory = SessionMemory()  # what the sessions learn of the graph, handed on
        for (plan, batch, node_lines, edge_lines, last), following in _with_next(_prefetched(
                _all_batches(plans, batch_size))):
            committing = time.monotonic()
            if session is None or committing - since > LOCK_HOLD_S:
                held.close()  # other writers get their turn between sessions
                session = held.enter_context(writer.session(pipelined=True, memory=memory))
                since = time.monotonic()
            if following is not None:  # prepared while this batch's transaction commits
                session.ahead(batch, following[1], source=following[0].source, tenant=tenant,
                              valid_at=following[0].file.valid_at)
            committed = commit_fitting(
                partial(_commit_one, session, source=plan.source, tenant=tenant,
                        valid_at=plan.file.valid_at),
                Part.of(batch, node_lines, edge_lines), _with_line_numbers)
            seconds = time.monotonic() - committing
            for result, _ in committed:
                observe_ingest(plan.source, result.counts, seconds / len(committed),
                               result.snapshot_version is not None)
            advance(progress, last - done[plan.key])
            done[plan.key] = last
            _save_position(positions, tenant, plan.key, last)
            for result, note in committed:
                results.append(result)
                progress(f"[jsonl] {plan.file.path.name}: through line {last}, "
                         f"snapshot {result.snapshot_version or 'unchanged'}{note}")
    return results


def _line_count(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)
