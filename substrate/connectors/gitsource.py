"""Read one commit of a local git checkout without checking it out.

Only the ``git`` command line is used: ``git ls-tree -r --name-only <commit>`` lists the files
and ``git cat-file --batch`` (the batched form of ``git show <commit>:<path>``) reads them.
"""

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


def resolve_commit(repo: Path, rev: str) -> str:
    """Full sha of ``rev`` (a branch, tag, short sha or ``HEAD``)."""
    return run_git(repo, "rev-parse", "--verify", f"{rev}^{{commit}}").decode().strip()


def _parse_cat_file(out: bytes, paths: list[str]) -> dict[str, str]:
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


class GitSnapshot:
    """The files of one commit: names, texts, and evidence references into them."""

    def __init__(self, repo: Path, rev: str = "HEAD") -> None:
        self.repo = Path(repo)
        self.commit = resolve_commit(self.repo, rev)
        self._files: tuple[str, ...] | None = None
        self._fileset: frozenset[str] = frozenset()
        self._texts: dict[str, str] = {}

    @property
    def short(self) -> str:
        return self.commit[:7]

    def files(self) -> tuple[str, ...]:
        """Every file path of the commit, sorted."""
        if self._files is None:
            out = run_git(self.repo, "ls-tree", "-r", "--name-only", "-z", self.commit)
            self._files = tuple(sorted(p for p in out.decode().split("\0") if p))
            self._fileset = frozenset(self._files)
        return self._files

    def exists(self, path: str) -> bool:
        self.files()
        return path in self._fileset

    def preload(self, paths: Iterable[str]) -> None:
        """Read many files with one ``git cat-file --batch`` process."""
        todo = [p for p in dict.fromkeys(paths) if p not in self._texts]
        if not todo:
            return
        request = "".join(f"{self.commit}:{p}\n" for p in todo).encode()
        out = run_git(self.repo, "cat-file", "--batch", stdin=request)
        self._texts.update(_parse_cat_file(out, todo))

    def read(self, path: str) -> str:
        """Text of ``path`` at the commit (``KeyError`` if the file is not in it)."""
        if path not in self._texts:
            self.preload([path])
        return self._texts[path]

    def ref(self, path: str, line: int) -> str:
        """Evidence reference ``path#L<line>@<shortcommit>``."""
        return f"{path}#L{line}@{self.short}"
