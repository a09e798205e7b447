"""Where each line of a file came from: ``git blame --porcelain``, cached across commits.

The cache is exact, never a guess: blame of ``path`` at commit ``C`` is reused for a commit
whose first parent is ``C`` and whose ``path`` has the same blob (a commit that does not touch
a file leaves its blame unchanged: git passes a file's whole blame to a parent holding the
same blob, the first parent first, merges included). Replaying a history commit by commit
therefore runs ``git blame`` only for the files each commit changed. A replay that already
knows each commit's first parent and changed paths declares them
(:func:`declare_first_parent`), which spares two git processes per commit.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Collection, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from substrate.connectors.gitcmd import GitError, run_git, tree_blobs


@dataclass(frozen=True)
class FirstParent:
    """A commit's first parent and how to tell a file unchanged from it: the parent's blobs,
    or the paths the commit changes against it (``git diff --no-renames``)."""

    sha: str
    blobs: dict[str, str] | None = None
    changed: Collection[str] = ()

    def same_blob(self, path: str, blob: str) -> bool:
        if self.blobs is not None:
            return self.blobs.get(path) == blob
        return path not in self.changed


Origin = tuple[str, int, str]  # (commit sha, line there, path there)
Origins = tuple[Origin, ...]  # per line of the file
_HEADER = re.compile(r"^([0-9a-f]{40}) (\d+) (\d+)")
_CACHE: OrderedDict[tuple[str, str, str], tuple[str, Origins]] = OrderedDict()
_PARENTS: dict[tuple[str, str], FirstParent | None] = {}
_LATEST: dict[tuple[str, str], str] = {}  # (repo, path) -> commit of its newest blame kept
_SAME_AS: dict[tuple[str, str], str] = {}  # (repo, commit) -> an older commit, same files read
_LIMIT = 20_000
# (repo, commit, path) -> (since, git's output of the ranged blame since..commit), run ahead
_AHEAD: dict[tuple[str, str, str], tuple[str, Future[bytes | None]]] = {}
AHEAD_WORKERS = 3


def same_files_as(repo: Path, commit: str, earlier: str) -> None:
    """Declare that every file whose blame was taken at ``earlier`` is unchanged from there
    to ``commit`` (a history replay skipped the commits between; see ``path_filter``): the
    child of ``commit`` may reuse ``earlier``'s blames (still only for the same blob)."""
    _SAME_AS[(str(repo), commit)] = _SAME_AS.get((str(repo), earlier), earlier)
    while len(_SAME_AS) > _LIMIT:
        _SAME_AS.pop(next(iter(_SAME_AS)))


def parse_porcelain(text: str, path: str = "") -> Origins:
    """``(origin commit, origin line, origin path)`` for each final line, in order.

    The origin path is the ``filename`` porcelain reports for the line's group: the name the
    file had in the commit that wrote the line (a renamed file keeps its old name there, so
    ``git show <commit>:<path>`` exists). Git prints it once per commit (or per group when
    the commit has several paths); a group without one reuses its commit's last name.
    """
    return _porcelain(text, path)[0]


def _porcelain(text: str, path: str) -> tuple[Origins, set[str]]:
    """:func:`parse_porcelain` and the boundary commits (a ranged blame's lower end)."""
    by_line, boundary = _porcelain_lines(text, path)
    return tuple(by_line[n] for n in sorted(by_line)), boundary


def _porcelain_lines(text: str, path: str) -> tuple[dict[int, Origin], set[str]]:
    """``final line -> origin`` of the lines a blame reports (every line, or those of its
    ``-L`` ranges), and the boundary commits."""
    boundary: set[str] = set()
    found: dict[int, tuple[str, int]] = {}
    group_of: dict[int, int] = {}
    group_file: list[str] = []
    last_file: dict[str, str] = {}
    group_sha = ""
    for line in text.splitlines():
        if line.startswith("\t"):
            continue
        match = _HEADER.match(line)
        if match:
            sha = match.group(1)
            if line.count(" ") >= 3 or not group_file or sha != group_sha:
                group_sha = sha
                group_file.append(last_file.get(sha, path))
            found[int(match.group(3))] = (sha, int(match.group(2)))
            group_of[int(match.group(3))] = len(group_file) - 1
        elif line.startswith("filename ") and group_file:
            name = line[len("filename "):]
            last_file[group_sha] = name
            group_file[-1] = name
        elif line == "boundary":
            boundary.add(group_sha)
    return {n: (*found[n], group_file[group_of[n]]) for n in found}, boundary


def declare_first_parent(repo: Path, commit: str, parent: str, changed: Collection[str]) -> None:
    """Declare ``commit``'s first parent and the paths it changes against it (every path
    added, deleted or modified, renames as both names)."""
    _PARENTS[(str(repo), commit)] = FirstParent(parent, changed=changed)


def _first_parent(repo: Path, commit: str) -> FirstParent | None:
    """The first parent of ``commit`` (``None`` for a root)."""
    key = (str(repo), commit)
    if key not in _PARENTS:
        shas = run_git(repo, "rev-list", "--parents", "-n", "1", commit).split()
        parents = [s.decode() for s in shas[1:]]
        _PARENTS[key] = FirstParent(parents[0], tree_blobs(repo, parents[0])) \
            if parents else None
    return _PARENTS[key]


def _remember(key: tuple[str, str, str], value: tuple[str, Origins]) -> None:
    _CACHE[key] = value
    _LATEST[(key[0], key[2])] = key[1]
    _CACHE.move_to_end(key)
    while len(_CACHE) > _LIMIT:
        _CACHE.popitem(last=False)
    while len(_PARENTS) > _LIMIT:
        _PARENTS.pop(next(iter(_PARENTS)))


def blame(repo: Path, commit: str, blob: str, path: str) -> Origins:
    """Origins of every line of ``path`` (whose blob is ``blob``) at ``commit``."""
    key = (str(repo), commit, path)
    if key in _CACHE:
        return _CACHE[key][1]
    parent = _first_parent(repo, commit)
    if parent is not None and parent.same_blob(path, blob):
        source = _SAME_AS.get((str(repo), parent.sha), parent.sha)
        cached = _CACHE.get((str(repo), source, path))
        if cached is not None and cached[0] == blob:
            _remember(key, cached)
            return cached[1]
    origins = _since_kept(repo, commit, path)
    if origins is None:
        out = run_git(repo, "blame", "--porcelain", commit, "--", path)
        origins = parse_porcelain(out.decode("utf-8", "replace"), path)
    _remember(key, (blob, origins))
    return origins


def _since_kept(repo: Path, commit: str, path: str) -> Origins | None:
    """Blame of ``path`` at ``commit`` from the newest one kept (at ``since``):
    ``git blame since..commit`` walks only the commits between, and each line it leaves at
    the boundary ``since`` has the origin ``since``'s blame gives that line (git hands a
    line to a parent, then traces it from there exactly as a blame started there does).
    ``None`` (run a full blame) when a line stops at another boundary commit, or ``since``'s
    blame of the file under its name there is no longer kept."""
    since = _LATEST.get((str(repo), path))
    if since is None or since == commit:
        return None
    ahead = _AHEAD.pop((str(repo), commit, path), None)
    if ahead is not None and ahead[0] == since:
        out = ahead[1].result()
    else:
        out = _ranged(repo, since, commit, path)
    if out is None:
        return None
    ranged, boundary = _porcelain(out.decode("utf-8", "replace"), path)
    origins: list[Origin] = []
    for sha, line, name in ranged:
        if sha not in boundary:
            origins.append((sha, line, name))
            continue
        kept = _CACHE.get((str(repo), since, name)) if sha == since else None
        if kept is None or not 1 <= line <= len(kept[1]):
            return None
        origins.append(kept[1][line - 1])
    return tuple(origins)


def _ranged(repo: Path, since: str, commit: str, path: str) -> bytes | None:
    """git's porcelain of the blame of ``path`` from ``since`` to ``commit``, None when it
    fails."""
    try:
        return run_git(repo, "blame", "--porcelain", f"{since}..{commit}", "--", path)
    except GitError:
        return None


@lru_cache(maxsize=1)
def _pool() -> ThreadPoolExecutor:
    """The threads that wait on :func:`blame_ahead`'s git processes (kept: starting threads
    per commit cost more than the waits they save)."""
    return ThreadPoolExecutor(max_workers=AHEAD_WORKERS, thread_name_prefix="blame-ahead")


def blame_ahead(repo: Path, commit: str, paths: Iterable[str]) -> None:
    """Start, side by side (:data:`AHEAD_WORKERS` git processes at once) and while the
    caller goes on, the ranged blames :func:`blame` will run at ``commit`` for those of
    ``paths`` (the files changed since the commit parsed before) whose blame was kept at an
    older commit: a replay's connectors ask for them one at a time, each waiting on its own
    git process. Only git's output is kept (:func:`_since_kept` waits for it and reads it as
    it would its own call's); what is not asked for at ``commit`` is dropped at the next
    call."""
    for _, unasked in _AHEAD.values():
        unasked.cancel()  # not started yet: not run
    _AHEAD.clear()
    todo = [(path, since) for path in dict.fromkeys(paths)
            if (since := _LATEST.get((str(repo), path))) is not None and since != commit
            and (str(repo), commit, path) not in _CACHE]
    for path, since in todo:
        _AHEAD[(str(repo), commit, path)] = (
            since, _pool().submit(_ranged, repo, since, commit, path))


def is_known(repo: Path, commit: str, blob: str, path: str) -> bool:
    """Is the blame of ``path`` (blob ``blob``) at ``commit`` kept, or its first parent's
    for the same blob, so that :func:`blame` runs no git (a parent not declared or looked up
    before is not looked up)?"""
    if (str(repo), commit, path) in _CACHE:
        return True
    parent = _PARENTS.get((str(repo), commit))
    if parent is None or not parent.same_blob(path, blob):
        return False
    cached = _CACHE.get((str(repo), _SAME_AS.get((str(repo), parent.sha), parent.sha), path))
    return cached is not None and cached[0] == blob


def blame_lines(repo: Path, commit: str, path: str, lines: Collection[int]) -> dict[int, Origin]:
    """Origins of some lines of ``path`` at ``commit`` (those it has): one ``git blame`` of
    only those lines (``-L n,n`` each), the origins a whole file's blame gives them, in about
    half its time when the lines are few. Not kept: for a file read once (comments at a
    replay's last commit), not commit after commit."""
    ranges = [arg for n in sorted(set(lines)) if n >= 1 for arg in ("-L", f"{n},{n}")]
    if not ranges:
        return {}
    try:
        out = run_git(repo, "blame", "--porcelain", *ranges, commit, "--", path)
    except GitError:  # a line past the end (git refuses the whole call): none found
        return {}
    return _porcelain_lines(out.decode("utf-8", "replace"), path)[0]


def blame_line(
    repo: Path, commit: str, blobs: dict[str, str], path: str, line: int
) -> Origin | None:
    """Origin of one line, ``None`` when the file or line does not exist or blame fails."""
    if path not in blobs:
        return None
    try:
        origins = blame(repo, commit, blobs[path], path)
    except GitError:
        return None
    return origins[line - 1] if 1 <= line <= len(origins) else None
