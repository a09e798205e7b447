"""Replay a repository's history: first-parent commits oldest → newest, one batch per commit.

``list_commits`` runs ``git log --first-parent --reverse`` (the same walk as
``git rev-list --first-parent --reverse``) and filters in Python, so ``since``/``until``
compare committer timestamps exactly even when dates are not monotonic.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path

from substrate.connectors.gitcmd import known_commits, run_git
from substrate.connectors.gitrepo import DEFAULT_THRESHOLD, batch_at
from substrate.graph.records import GraphBatch

__all__ = ["CommitInfo", "batch_at", "first_parent_commits", "history_batches", "list_commits"]
_SEP = "\x1f"


@dataclass(frozen=True)
class CommitInfo:
    """A commit of the first-parent history; ``timestamp`` is the committer time, ISO 8601 UTC."""

    sha: str
    timestamp: str
    subject: str
    author: str = ""
    author_email: str = ""

    @property
    def when(self) -> datetime:
        return datetime.fromisoformat(self.timestamp)


def _bound(value: str | date | datetime | None, end: bool) -> datetime | None:
    """A ``since``/``until`` bound as an aware datetime; a bare date covers its whole day."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value) if "T" in value else date.fromisoformat(value)
    if not isinstance(value, datetime):
        value = datetime.combine(value, time.max if end else time.min)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _parse(line: str) -> CommitInfo:
    sha, stamp, author, email, subject = line.split(_SEP, 4)
    when = datetime.fromisoformat(stamp).astimezone(UTC)
    return CommitInfo(sha, when.isoformat().replace("+00:00", "Z"), subject, author, email)


def list_commits(
    repo: Path | str,
    rev: str = "HEAD",
    since: str | date | datetime | None = None,
    until: str | date | datetime | None = None,
    every: int = 1,
    include_last: bool = True,
) -> list[CommitInfo]:
    """First-parent commits of ``rev``, oldest first, within ``[since, until]``.

    ``every=N`` keeps the 1st, (N+1)th, ... commit of the filtered list and, with
    ``include_last``, always the newest one (so the final state is never skipped)."""
    if every < 1:
        raise ValueError("every must be >= 1")
    fmt = _SEP.join(("%H", "%cI", "%an", "%ae", "%s"))
    out = run_git(Path(repo), "log", "--first-parent", "--reverse", f"--format={fmt}", rev)
    commits = [_parse(line) for line in out.decode("utf-8", "replace").splitlines() if line]
    known_commits(Path(repo), (c.sha for c in commits))
    low, high = _bound(since, end=False), _bound(until, end=True)
    kept = [
        c for c in commits if (low is None or c.when >= low) and (high is None or c.when <= high)
    ]
    picked = kept[::every]
    if include_last and kept and picked[-1] is not kept[-1]:
        picked.append(kept[-1])
    return picked


first_parent_commits = list_commits


def history_batches(
    repo: Path | str,
    rev: str = "HEAD",
    since: str | date | datetime | None = None,
    until: str | date | datetime | None = None,
    every: int = 1,
    threshold: float = DEFAULT_THRESHOLD,
) -> Iterator[tuple[CommitInfo, GraphBatch]]:
    """``(commit, batch_at(commit))`` for each commit :func:`list_commits` selects."""
    for commit in list_commits(repo, rev, since, until, every):
        yield commit, batch_at(repo, commit.sha, threshold)
