"""Load a git repository into the graph: HEAD only, or its first-parent history replayed."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

from substrate.connectors import renames
from substrate.connectors.blame import declare_first_parent, same_files_as
from substrate.connectors.chunking import ChunkerConfig, chunk_document
from substrate.connectors.gitcmd import known_tree
from substrate.connectors.gitrepo import batch_at
from substrate.connectors.history import CommitInfo, first_parent_commits
from substrate.connectors.path_filter import Change, changed_paths, commits_to_parse
from substrate.connectors.replay_lock import latest_valid_at, replay_lock
from substrate.connectors.tree_walk import TreeWalk, raw_changes
from substrate.graph.merge import merge_entities
from substrate.graph.records import EdgeRecord, GraphBatch
from substrate.graph.writer import CommitResult, GraphWriter
from substrate.observability.metrics import observe_ingest
from substrate.observability.progress import advance, set_total

Progress = Callable[[str], None]


CHUNKED_LABELS = ("Document", "DecisionNode", "FailurePattern")
CHUNKS = ChunkerConfig(max_chars=1000, overlap_chars=150)  # MiniLM reads ~256 tokens


def with_chunks(batch: GraphBatch) -> GraphBatch:
    """Documents, ADRs and post-mortems also become chunks with sequence edges."""
    for node in list(batch.nodes):
        text, path = node.props.get("text"), node.props.get("path")
        if node.label in CHUNKED_LABELS and isinstance(text, str) and text and path:
            batch.extend(chunk_document(str(path), text, CHUNKS, sequence_edges=True,
                                        doc_ceid=node.ceid))
    return batch


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
        merge_entities(writer, tenant, move.new.ceid, move.old.ceid, move.evidence_ref,
                       actor=f"git-rename {commit.sha[:7]}", valid_at=when, alias_props=props)
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


def _declare_parents(repo: Path, changes: dict[str, tuple[Change, ...]]) -> None:
    """Each commit's first parent (the next older commit of the first-parent walk) and the
    paths it changes, for git blame's cache (no git process per commit to find them)."""
    newest_first = list(changes)
    for commit, parent in zip(newest_first, newest_first[1:], strict=False):
        declare_first_parent(repo, commit, parent, {path for _, path in changes[commit]})


def _replay(
    writer: GraphWriter, repo: Path, source: str, tenant: str, conn: Conn,
    clock: datetime | None, *, history: bool, since: str | None, until: str | None,
    every: int, progress: Progress, path_filter: bool,
) -> list[CommitResult]:
    """Replay ``commits`` (see :func:`ingest_git`). A parsed commit whose batch is the one
    written last (``repr``-equal: same records, same order) is not written again: the
    writer would find nothing changed and make no snapshot (the result repeats the last
    one's content hash); after a rename's merge the next batch is always written."""
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
    parse: set[str] | None = None
    trees: TreeWalk | None = None
    if path_filter:
        changes = changed_paths(repo)
        parse = commits_to_parse([c.sha for c in commits], changes, reversed(list(changes)))
        _declare_parents(repo, changes)
        trees = TreeWalk(repo, raw_changes(repo)) if len(parse) > 1 else None
    parsed, unparsed = "", list[CommitInfo]()
    previous: GraphBatch | None = None
    written = ""  # repr of the batch written last ("" after a rename's merge)
    for i, commit in enumerate(commits, 1):
        if parse is not None and commit.sha not in parse and parsed:
            results.append(CommitResult(None, results[-1].content_hash))  # the same batch
            same_files_as(repo, commit.sha, parsed)
            unparsed.append(commit)
            advance(progress)
            continue
        if trees is not None:
            known_tree(repo, commit.sha, trees.at(commit.sha))
        batch = with_chunks(batch_at(repo, commit.sha))
        moves = (renames.find(repo, parsed, previous, commit.sha, batch)
                 if previous is not None else [])
        previous, parsed = GraphBatch(list(batch.nodes), list(batch.edges)), commit.sha
        batch.nodes.extend(r.old for r in moves if not r.link_only)  # live through the commit
        committing = time.monotonic()
        when = datetime.fromisoformat(commit.timestamp)
        clock = when if clock is None or when > clock else clock
        text = repr(batch) if not moves else ""
        unwritten = bool(text) and text == written
        if unwritten:
            result = CommitResult(None, results[-1].content_hash)
            unparsed.append(commit)
        else:
            _mark_skipped(conn, tenant, source, unparsed)
            result = writer.commit(
                batch, source=source, tenant=tenant, mode="sync", valid_at=clock,
                note=f"{commit.sha} {commit.subject}",
            )
            written = text
        observe_ingest(source, result.counts, time.monotonic() - committing,
                       result.snapshot_version is not None)
        for move in moves:
            _carry_identity(writer, tenant, source, commit, clock, move, progress)
        if not unwritten:
            _mark(conn, tenant, source, commit, result.snapshot_version)
        results.append(result)
        progress(f"[git] {i}/{len(commits)} {commit.sha[:8]} {commit.timestamp} "
                 f"snapshot {result.snapshot_version or 'unchanged'} "
                 f"({time.monotonic() - started:.1f}s)")
        advance(progress)
    _mark_skipped(conn, tenant, source, unparsed)
    if parse is not None:
        progress(f"[git] {len(commits) - len(parse)} of {len(commits)} commit(s) change no "
                 f"file a connector reads: not parsed")
    return results
