"""Where each line of a file came from: ``git blame --porcelain``, cached across commits.

The cache is exact, never a guess: blame of ``path`` at commit ``C`` is reused for a commit
whose only parent is ``C`` and whose ``path`` has the same blob (a commit that does not touch
a file leaves its blame unchanged). Replaying a history commit by commit therefore runs
``git blame`` only for the files each commit changed.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path

from substrate.connectors.gitcmd import GitError, run_git, tree_blobs

Origin = tuple[str, int, str]  # (commit sha, line there, path there)
Origins = tuple[Origin, ...]  # per line of the file
_HEADER = re.compile(r"^([0-9a-f]{40}) (\d+) (\d+)")
_CACHE: OrderedDict[tuple[str, str, str], tuple[str, Origins]] = OrderedDict()
_PARENTS: dict[tuple[str, str], tuple[str, dict[str, str]] | None] = {}
_SAME_AS: dict[tuple[str, str], str] = {}  # (repo, commit) -> an older commit, same files read
_LIMIT = 20_000


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
    return tuple((*found[n], group_file[group_of[n]]) for n in sorted(found))


def _only_parent(repo: Path, commit: str) -> tuple[str, dict[str, str]] | None:
    """The single parent of ``commit`` and its blobs (``None`` for merges and roots)."""
    key = (str(repo), commit)
    if key not in _PARENTS:
        shas = run_git(repo, "rev-list", "--parents", "-n", "1", commit).split()
        parents = [s.decode() for s in shas[1:]]
        one = (parents[0], tree_blobs(repo, parents[0])) if len(parents) == 1 else None
        _PARENTS[key] = one
    return _PARENTS[key]


def _remember(key: tuple[str, str, str], value: tuple[str, Origins]) -> None:
    _CACHE[key] = value
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
    parent = _only_parent(repo, commit)
    if parent is not None and parent[1].get(path) == blob:
        source = _SAME_AS.get((str(repo), parent[0]), parent[0])
        cached = _CACHE.get((str(repo), source, path))
        if cached is not None and cached[0] == blob:
            _remember(key, cached)
            return cached[1]
    out = run_git(repo, "blame", "--porcelain", commit, "--", path)
    origins = parse_porcelain(out.decode("utf-8", "replace"), path)
    _remember(key, (blob, origins))
    return origins


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
