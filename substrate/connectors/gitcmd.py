"""The ``git`` command line, isolated from the user's and the system's configuration."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

# isolate every git call from the user's and the system's configuration
_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}


class GitError(RuntimeError):
    """A git command failed; the message carries git's stderr."""


def run_git(
    repo: Path, *args: str, env: Mapping[str, str] | None = None, stdin: bytes | None = None
) -> bytes:
    """Run ``git -C repo args...`` and return its stdout; raise :class:`GitError` on failure."""
    full_env = {**os.environ, **_GIT_ENV, **(env or {})}
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        input=stdin,
        capture_output=True,
        env=full_env,
        check=False,
    )
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git {' '.join(args)}: {err}")
    return proc.stdout


_KNOWN: set[tuple[str, str]] = set()  # (repo, full sha) that git listed as a commit


def known_commits(repo: Path, shas: Iterable[str]) -> None:
    """Remember full shas ``git log`` listed as commits of ``repo`` (an object id names the
    same object forever): :func:`resolve_commit` returns them without asking git again."""
    _KNOWN.update((str(repo), sha) for sha in shas)


def resolve_commit(repo: Path, rev: str) -> str:
    """Full sha of ``rev`` (a branch, tag, short sha or ``HEAD``)."""
    if (str(repo), rev) in _KNOWN:
        return rev
    return run_git(repo, "rev-parse", "--verify", f"{rev}^{{commit}}").decode().strip()


def parse_cat_file(out: bytes, paths: list[str]) -> dict[str, str]:
    texts: dict[str, str] = {}
    pos = 0
    for path in paths:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if len(header) < 3 or header[-1] == b"missing":
            continue
        size = int(header[2])
        texts[path] = out[pos : pos + size].decode("utf-8", "replace")
        pos += size + 1
    return texts


_TREES: dict[tuple[str, str], dict[str, str]] = {}  # (repo, commit) -> its files, declared
_TREES_KEPT = 4


def known_tree(repo: Path, commit: str, blobs: dict[str, str]) -> None:
    """Declare the files of ``commit`` (``path -> blob``, as :func:`tree_blobs` lists them),
    e.g. from a history's ``git log --raw`` (see :mod:`tree_walk`); the last few are kept."""
    _TREES[(str(repo), commit)] = blobs
    while len(_TREES) > _TREES_KEPT:
        _TREES.pop(next(iter(_TREES)))


def tree_blobs(repo: Path, commit: str) -> dict[str, str]:
    """``path -> blob sha`` of every file of ``commit``."""
    known = _TREES.get((str(repo), commit))
    if known is not None:
        return dict(known)
    out = run_git(repo, "ls-tree", "-r", "-z", "--full-tree", commit).decode()
    blobs: dict[str, str] = {}
    for entry in out.split("\0"):
        meta, _, path = entry.partition("\t")
        parts = meta.split()
        if path and len(parts) == 3 and parts[1] == "blob":
            blobs[path] = parts[2]
    return blobs
