"""The ``git`` command line, isolated from the user's and the system's configuration."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
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


class CatFile:
    """One long-running ``git cat-file --batch`` of ``repo``: blobs read by id without a git
    process per read (requests go in slices that fit a pipe's buffer, then their answers
    are read: neither side waits on the other)."""

    SLICE = 1000  # 41-byte requests: well under a pipe's 64 KiB

    def __init__(self, repo: Path) -> None:
        self.proc = subprocess.Popen(
            ["git", "-C", str(repo), "cat-file", "--batch"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, **_GIT_ENV})

    def read(self, blobs: list[str]) -> dict[str, str]:
        """``blob id -> text`` of those that exist."""
        texts: dict[str, str] = {}
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        for start in range(0, len(blobs), self.SLICE):
            part = blobs[start : start + self.SLICE]
            stdin.write("".join(f"{b}\n" for b in part).encode())
            stdin.flush()
            for blob in part:
                header = stdout.readline().split()
                if not header:
                    raise GitError(f"git cat-file --batch ended reading {blob}")
                if len(header) < 3 or header[-1] == b"missing":
                    continue
                data = stdout.read(int(header[2]) + 1)
                texts[blob] = data[:-1].decode("utf-8", "replace")
        return texts

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc.wait()


_READERS: dict[str, CatFile] = {}


@contextmanager
def batch_reader(repo: Path) -> Iterator[None]:
    """While open, :func:`read_blobs` of ``repo`` goes through one long-running
    ``git cat-file --batch`` (a history replay reads new blobs at every parsed commit)."""
    key = str(repo)
    if key in _READERS:
        yield
        return
    _READERS[key] = reader = CatFile(repo)
    try:
        yield
    finally:
        del _READERS[key]
        reader.close()


def read_blobs(repo: Path, blobs: list[str]) -> dict[str, str]:
    """``blob id -> text`` (missing ones left out), through the open :func:`batch_reader` of
    ``repo``, else one ``git cat-file --batch`` process."""
    reader = _READERS.get(str(repo))
    if reader is not None:
        return reader.read(blobs)
    request = "".join(f"{b}\n" for b in blobs).encode()
    return parse_cat_file(run_git(repo, "cat-file", "--batch", stdin=request), blobs)


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
