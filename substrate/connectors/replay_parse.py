"""Parse a first-parent history ahead of its writer, in a process of its own.

A history replay parses commits (git processes, YAML, blame; CPU in this interpreter) and
writes snapshots (mostly waiting on Neo4j and PostgreSQL). :func:`parsed_ahead` runs the
parsing in a child Python process (``python -m substrate.connectors.replay_parse``) that
streams each commit's outcome, in history order, while the caller writes the ones before it:
the two overlap and the parser does not compete with the writer for the GIL. What each
commit yields is exactly what parsing it in the caller's process yields
(:class:`HistoryParser` is the same code on both sides; one commit is parsed in place).

Per commit (oldest first) a :class:`Parsed`: not parsed (the path filter: it changes no file
a connector reads), parsed with the batch written last (``repr``-equal: the writer would make
no snapshot), or parsed with a batch to write and the renames it made (:mod:`renames`).
"""

from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

import substrate
from substrate.connectors import renames
from substrate.connectors.blame import blame_ahead, declare_first_parent, same_files_as
from substrate.connectors.chunking import ChunkerConfig, chunk_document
from substrate.connectors.gitcmd import GitError, batch_reader, known_commits, known_tree
from substrate.connectors.gitrepo import batch_at
from substrate.connectors.path_filter import (
    Change,
    changed_paths,
    commits_to_parse,
    content_hits,
)
from substrate.connectors.tree_walk import TreeWalk, blobs_after, raw_blob_changes
from substrate.graph.records import GraphBatch

CHUNKED_LABELS = ("Document", "DecisionNode", "FailurePattern")
CHUNKS = ChunkerConfig(max_chars=1000, overlap_chars=150)  # MiniLM reads ~256 tokens
LOOKAHEAD = 16  # parsed commits kept ahead of the writer


def with_chunks(batch: GraphBatch) -> GraphBatch:
    """Documents, ADRs and post-mortems also become chunks with sequence edges."""
    for node in list(batch.nodes):
        text, path = node.props.get("text"), node.props.get("path")
        if node.label in CHUNKED_LABELS and isinstance(text, str) and text and path:
            batch.extend(_chunks(str(path), text, node.ceid))
    return batch


@lru_cache(maxsize=4096)
def _chunks(path: str, text: str, doc_ceid: str) -> GraphBatch:
    """A document's chunks (memoised: a history replay chunks the same documents at every
    commit; the records are frozen and ``GraphBatch.extend`` copies the lists)."""
    return chunk_document(path, text, CHUNKS, sequence_edges=True, doc_ceid=doc_ceid)


@dataclass(frozen=True)
class Parsed:
    """One commit's outcome: ``parsed`` False when the path filter skipped it; ``batch``
    None when it was not parsed or its batch is the one written last."""

    sha: str
    parsed: bool
    batch: GraphBatch | None = None
    moves: tuple[renames.Rename, ...] = ()


def _declare_parents(repo: Path, changes: dict[str, tuple[Change, ...]]) -> None:
    """Each commit's first parent (the next older commit of the first-parent walk) and the
    paths it changes, for git blame's cache (no git process per commit to find them)."""
    newest_first = list(changes)
    for commit, parent in zip(newest_first, newest_first[1:], strict=False):
        declare_first_parent(repo, commit, parent, {path for _, path in changes[commit]})


class HistoryParser:
    """The parsing side of a replay of ``shas`` (oldest first) of ``repo``. ``to_parse``:
    the commits the path filter keeps (``None``: no filter, every commit is parsed)."""

    def __init__(self, repo: Path, shas: Sequence[str], path_filter: bool) -> None:
        self.repo, self.shas = repo, list(shas)
        self.to_parse: set[str] | None = None
        self._trees: TreeWalk | None = None
        self._changes: dict[str, tuple[Change, ...]] = {}
        if path_filter:
            changes = self._changes = changed_paths(repo)
            known_commits(repo, changes)  # git listed them: no rev-parse per snapshot
            raw = raw_blob_changes(repo)  # the content test's and the tree walk's
            self.to_parse = commits_to_parse(self.shas, changes, reversed(list(changes)),
                                             hits=content_hits(repo, raw=raw))
            self.to_parse |= set(self.shas[-1:])  # where the prose pages are read
            _declare_parents(repo, changes)
            if len(self.to_parse) > 1:
                self._trees = TreeWalk(repo, blobs_after(raw))

    def outcomes(self) -> Generator[Parsed, None, None]:
        """Each commit's outcome, oldest first."""
        with batch_reader(self.repo):
            yield from self._parse()

    def _parse(self) -> Iterator[Parsed]:
        parsed, previous = "", None
        written = ""  # repr of the batch written last ("" after a rename's merge)
        changed: set[str] = set()  # the paths changed since the commit parsed last
        for sha in self.shas:
            changed.update(path for _, path in self._changes.get(sha, ()))
            if self.to_parse is not None and sha not in self.to_parse and parsed:
                same_files_as(self.repo, sha, parsed)
                yield Parsed(sha, parsed=False)
                continue
            if self._trees is not None:
                known_tree(self.repo, sha, self._trees.at(sha))
            if parsed:  # the blames its connectors will ask for, run side by side
                blame_ahead(self.repo, sha, sorted(changed))
            changed.clear()
            # the prose pages (READMEs, documentation) at the last commit only: read at every
            # commit that edits one, they made a replay of a documented repository several
            # times slower (fac: 328 snapshots instead of 102) for a history nobody asks for
            batch = with_chunks(batch_at(self.repo, sha, prose=sha == self.shas[-1]))
            moves: list[renames.Rename] = (renames.find(self.repo, parsed, previous, sha, batch)
                     if previous is not None else [])
            previous, parsed = GraphBatch(list(batch.nodes), list(batch.edges)), sha
            batch.nodes.extend(r.old for r in moves if not r.link_only)  # live through it
            text = repr(batch) if not moves else ""
            if text and text == written:
                yield Parsed(sha, parsed=True)
                continue
            written = text
            yield Parsed(sha, parsed=True, batch=batch, moves=tuple(moves))


class ParseFailed(RuntimeError):
    """The parsing process failed (its error, or how it ended)."""


Outcomes = Generator[Parsed, None, None]


def parsed_ahead(repo: Path, shas: Sequence[str],
                 path_filter: bool) -> tuple[set[str] | None, Outcomes]:
    """``(commits to parse, each commit's outcome in order)``; more than one commit is
    parsed by a child process ahead of the caller (see the module doc). Stop early by
    closing the iterator (``close()``): the child is stopped."""
    if len(shas) <= 1:
        parser = HistoryParser(repo, shas, path_filter)
        return parser.to_parse, parser.outcomes()
    child = _Child(repo, shas, path_filter)
    return child.to_parse, child.outcomes()


def _environment() -> dict[str, str]:
    """The child imports this very ``substrate`` package."""
    root = str(Path(substrate.__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}


class _Child:
    def __init__(self, repo: Path, shas: Sequence[str], path_filter: bool) -> None:
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed by outcomes()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "substrate.connectors.replay_parse", str(repo),
             "filter" if path_filter else "all"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors,
            env=_environment())
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.queue: queue.Queue[tuple[Any, ...]] = queue.Queue(maxsize=LOOKAHEAD)
        self.stopping = threading.Event()
        try:
            self.proc.stdin.write("".join(f"{s}\n" for s in shas).encode())
            self.proc.stdin.close()
            self.to_parse: set[str] | None = self._frame(self._load(self.proc.stdout))[1]
        except BaseException:
            self.stop()
            self.errors.close()
            raise
        self.reader = threading.Thread(target=self._read, args=(self.proc.stdout,),
                                       name="replay-parse", daemon=True)
        self.reader.start()

    @staticmethod
    def _load(stream: IO[bytes]) -> tuple[Any, ...]:
        try:
            frame: tuple[Any, ...] = pickle.load(stream)
        except (EOFError, OSError, ValueError, pickle.UnpicklingError):
            return ("gone",)
        except Exception as exc:  # noqa: BLE001 - a frame this process cannot read
            return ("error", type(exc).__name__, str(exc))
        return frame

    def _read(self, stream: IO[bytes]) -> None:
        """Frames from the child onto the queue, until its end or an error."""
        while True:
            frame = self._load(stream)
            while not self.stopping.is_set():
                try:
                    self.queue.put(frame, timeout=0.2)
                    break
                except queue.Full:
                    continue
            if frame[0] != "item" or self.stopping.is_set():
                return

    def _frame(self, frame: tuple[Any, ...]) -> tuple[Any, ...]:
        if frame[0] == "error":
            self.stop()
            raise GitError(frame[2]) if frame[1] == "GitError" else \
                ParseFailed(f"history parser: {frame[1]}: {frame[2]}")
        if frame[0] == "gone":
            self.stop()
            self.errors.seek(0)
            err = self.errors.read().decode("utf-8", "replace")
            raise ParseFailed(f"history parser ended (exit {self.proc.returncode}): "
                              f"{err.strip()[-2000:]}")
        return frame

    def outcomes(self) -> Outcomes:
        try:
            while True:
                frame = self._frame(self.queue.get())
                if frame[0] == "end":
                    return
                yield frame[1]
        finally:
            self.stop()
            self.errors.close()

    def stop(self) -> None:
        self.stopping.set()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _serve(repo: Path, path_filter: bool, shas: list[str], out: IO[bytes]) -> None:
    def send(*frame: Any) -> None:
        pickle.dump(frame, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()

    try:
        parser = HistoryParser(repo, shas, path_filter)
        send("plan", parser.to_parse)
        for outcome in parser.outcomes():
            send("item", outcome)
        send("end")
    except Exception as exc:  # noqa: BLE001 - handed to the replaying process
        send("error", type(exc).__name__, str(exc))


def main(argv: list[str]) -> None:
    """``python -m substrate.connectors.replay_parse <repo> filter|all``, commit ids on
    stdin (oldest first); pickled frames on stdout."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed goes to stderr, not into the frames
    shas = [line.strip() for line in sys.stdin if line.strip()]
    _serve(Path(argv[0]), argv[1] == "filter", shas, out)
    out.close()


if __name__ == "__main__":  # frames name this module's classes by its import name
    from substrate.connectors import replay_parse

    replay_parse.main(sys.argv[1:])
