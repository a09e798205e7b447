"""Load a git repository into the graph: HEAD only, or its first-parent history replayed."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

from substrate.connectors import renames
from substrate.connectors.history import CommitInfo, first_parent_commits
from substrate.connectors.replay_lock import latest_valid_at, replay_lock
from substrate.connectors.replay_parse import Parsed, parsed_ahead
from substrate.connectors.replay_parse import with_chunks as with_chunks
from substrate.errors import BatchTooLarge, NotFound
from substrate.graph.fitting import Part, commit_fitting
from substrate.graph.merge import merge_entities
from substrate.graph.records import EdgeRecord, GraphBatch
from substrate.graph.writer import CommitResult, GraphWriter
from substrate.observability.metrics import observe_ingest
from substrate.observability.progress import advance, set_total

Progress = Callable[[str], None]


Conn = psycopg.Connection[Any]


def _processed(conn: Conn, tenant: str, source: str) -> set[str]:
    rows = conn.execute(
        "SELECT sha FROM ingested_commits WHERE tenant_id = %s AND source = %s",
        (tenant, source),
    ).fetchall()
    return {str(r[0]) for r in rows}


def _mark(conn: Conn, tenant: str, source: str, commit: CommitInfo, version: int | None) -> None:
    conn.execute(
        "INSERT INTO ingested_commits (tenant_id, source, sha, committed_at, snapshot_version)"
        " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (tenant, source, commit.sha, commit.when, version),
    )


def _mark_skipped(conn: Conn, tenant: str, source: str, commits: list[CommitInfo]) -> None:
    """Record commits replayed without a write (no snapshot), in one transaction."""
    if not commits:
        return
    with conn.transaction(), conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO ingested_commits (tenant_id, source, sha, committed_at, snapshot_version)"
            " VALUES (%s, %s, %s, %s, NULL) ON CONFLICT DO NOTHING",
            [(tenant, source, c.sha, c.when) for c in commits],
        )
    commits.clear()


def _carry_identity(writer: GraphWriter, tenant: str, source: str, commit: CommitInfo,
                    when: datetime, move: renames.Rename, progress: Progress) -> None:
    """The renamed entity becomes an alias of its new name, at the renaming commit's time;
    one still declared elsewhere is linked to it by ``RENAMED_TO`` instead (source
    ``<source>:renames``: the replay's sync mode never withdraws it)."""
    props = {"renamed": True, "from_path": move.from_path, "to_path": move.to_path,
             "commit": commit.sha, "kind": move.kind}
    if move.link_only:
        link = EdgeRecord("RENAMED_TO", move.old.ceid, move.new.ceid, move.evidence_ref,
                          props=props)
        writer.commit(GraphBatch([], [link]), source=f"{source}:renames", tenant=tenant,
                      valid_at=when, note=f"{commit.sha} rename {move.old.ceid} -> "
                      f"{move.new.ceid}")
    else:
        try:
            merge_entities(writer, tenant, move.new.ceid, move.old.ceid, move.evidence_ref,
                           actor=f"git-rename {commit.sha[:7]}", valid_at=when,
                           alias_props=props)
        except NotFound:  # the old name was never written (held for review as ambiguous,
            # fac's "((service_name))-deployer" binding): there is no identity to carry
            progress(f"[git] {commit.sha[:8]} renamed {move.old.ceid} -> {move.new.ceid}: "
                     f"{move.old.ceid} is not in the graph, nothing to carry")
            return
    progress(f"[git] {commit.sha[:8]} renamed {move.old.ceid} -> {move.new.ceid} "
             f"({move.kind}: {move.from_path} -> {move.to_path}"
             f"{', linked' if move.link_only else ''})")


def ingest_git(
    writer: GraphWriter, repo: Path, *, history: bool = False, since: str | None = None,
    until: str | None = None, every: int = 1, tenant: str | None = None,
    progress: Progress = print, path_filter: bool = True,
) -> list[CommitResult]:
    """Each replayed commit becomes one snapshot stamped with the commit time (sync mode:
    what the repository no longer says is closed, never deleted). ``path_filter``: commits
    that change no file a connector reads are not parsed (see :mod:`path_filter`).

    One replay per tenant and source at a time (a second one raises ``Conflict``), and
    snapshot times never go back: a commit older than the source's latest snapshot is stamped
    with that time (see :mod:`replay_lock`)."""
    source = f"git:{repo.resolve().name}"
    tenant = tenant or writer.settings.tenant
    with replay_lock(writer.settings.postgres_dsn, tenant, source) as conn:
        return _replay(writer, repo, source, tenant, conn, latest_valid_at(conn, tenant, source),
                       history=history, since=since, until=until, every=every,
                       progress=progress, path_filter=path_filter)


def _replay(
    writer: GraphWriter, repo: Path, source: str, tenant: str, conn: Conn,
    clock: datetime | None, *, history: bool, since: str | None, until: str | None,
    every: int, progress: Progress, path_filter: bool,
) -> list[CommitResult]:
    """Replay ``commits`` (see :func:`ingest_git`); they are parsed ahead of the writes
    (:mod:`replay_parse`). A parsed commit whose batch is the one written last (``repr``-
    equal: same records, same order) is not written again: the writer would find nothing
    changed and make no snapshot (the result repeats the last one's content hash); after a
    rename's merge the next batch is always written."""
    commits = first_parent_commits(repo, since=since, until=until, every=every)
    if not history:
        commits = commits[-1:]
    done = _processed(conn, tenant, source)
    skipped = [c for c in commits if c.sha in done]
    commits = [c for c in commits if c.sha not in done]
    if skipped:
        progress(f"[git] {len(skipped)} commit(s) already replayed for {source}; skipping them")
    set_total(progress, len(commits))
    results: list[CommitResult] = []
    started = time.monotonic()
    parse, outcomes = parsed_ahead(repo, [c.sha for c in commits], path_filter)
    unparsed: list[CommitInfo] = []
    with closing(outcomes):
        for i, (commit, parsed) in enumerate(zip(commits, outcomes, strict=True), 1):
            if not parsed.parsed:
                results.append(CommitResult(None, results[-1].content_hash))  # same batch
                unparsed.append(commit)
                advance(progress)
                continue
            clock = commit.when if clock is None or commit.when > clock else clock
            last = results[-1].content_hash if results else ""
            results.append(_write(writer, conn, source, tenant, commit, parsed, clock,
                                  unparsed, last, progress))
            progress(f"[git] {i}/{len(commits)} {commit.sha[:8]} {commit.timestamp} "
                     f"snapshot {results[-1].snapshot_version or 'unchanged'} "
                     f"({time.monotonic() - started:.1f}s)")
            advance(progress)
    _mark_skipped(conn, tenant, source, unparsed)
    if parse is not None:
        progress(f"[git] {len(commits) - len(parse)} of {len(commits)} commit(s) change no "
                 f"file a connector reads: not parsed")
    return results


def _commit_sync(writer: GraphWriter, batch: GraphBatch, source: str, tenant: str,
                 clock: datetime, note: str, progress: Progress) -> CommitResult:
    """``batch`` as the source's whole truth at ``clock`` (sync mode). When it would not
    fit one Neo4j transaction: what it adds and changes first, in parts that fit (upsert
    mode), then the sync commit, which is left with closing what the source no longer
    says. The graph ends as one sync commit leaves it, over more than one snapshot; the
    result names the last of them and counts the changes of all."""
    def sync() -> CommitResult:
        return writer.commit(batch, source=source, tenant=tenant, mode="sync",
                             valid_at=clock, note=note)

    try:
        return sync()
    except BatchTooLarge:
        def upsert(part: GraphBatch) -> CommitResult:
            return writer.commit(part, source=source, tenant=tenant, valid_at=clock,
                                 note=f"{note} (part)")
        made = [r for r, _ in commit_fitting(upsert, Part.of(batch))]
        progress(f"[git] {note.split(' ', 1)[0][:12]}: too large for one Neo4j transaction, "
                 f"written in {len(made)} part(s) before its sync commit")
        final = sync()  # nothing left to close: no snapshot of its own
        made.append(final)
        counts: Counter[str] = Counter()
        for r in made:
            counts.update(r.counts)
        versions = [r.snapshot_version for r in made if r.snapshot_version is not None]
        return CommitResult(versions[-1] if versions else None, final.content_hash,
                            [c for r in made for c in r.changed_ids], dict(counts),
                            sum(r.queued for r in made))


def _write(writer: GraphWriter, conn: Conn, source: str, tenant: str, commit: CommitInfo,
           parsed: Parsed, clock: datetime, unparsed: list[CommitInfo], last_hash: str,
           progress: Progress) -> CommitResult:
    """Write a parsed commit's batch as one snapshot stamped ``clock``, then its renames;
    none when it is the batch written last (``unparsed`` collects the commit, the result
    repeats ``last_hash``)."""
    committing = time.monotonic()
    if parsed.batch is None:
        result = CommitResult(None, last_hash)
        unparsed.append(commit)
    else:
        _mark_skipped(conn, tenant, source, unparsed)
        result = _commit_sync(writer, parsed.batch, source, tenant, clock,
                              f"{commit.sha} {commit.subject}", progress)
    observe_ingest(source, result.counts, time.monotonic() - committing,
                   result.snapshot_version is not None)
    if parsed.batch is not None:
        for move in parsed.moves:
            _carry_identity(writer, tenant, source, commit, clock, move, progress)
        _mark(conn, tenant, source, commit, result.snapshot_version)
    return result
