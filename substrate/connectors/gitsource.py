"""Read one commit of a local git checkout without checking it out.

Only the ``git`` command line is used: ``git ls-tree -r <commit>`` lists the files and
``git cat-file --batch`` (the batched form of ``git show <commit>:<path>``) reads them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from substrate.connectors.blame import blame_line
from substrate.connectors.gitcmd import (
    GitError,
    parse_cat_file,
    resolve_commit,
    run_git,
    tree_blobs,
)

__all__ = ["GitError", "GitSnapshot", "resolve_commit", "run_git", "tree_blobs"]


class GitSnapshot:
    """The files of one commit: names, texts, and evidence references into them.

    An evidence reference names the line *where it was written*: ``git blame`` maps line
    ``n`` of the file at this commit to ``(commit that introduced it, its line there, the file's
    name there)``, and :meth:`ref` returns ``<path there>#L<line there>@<that commit, 7 hex>``
    (a renamed file is cited by the name it had when the line was written). The reference is
    verifiable (``git show <commit>:<path>`` has the same text on that line) and stays the
    same in later commits for as long as the line itself is unchanged, so replaying history
    does not re-version every edge on every commit.
    """

    def __init__(self, repo: Path, rev: str = "HEAD") -> None:
        self.repo = Path(repo)
        self.commit = resolve_commit(self.repo, rev)
        self._blobs: dict[str, str] | None = None
        self._files: tuple[str, ...] = ()
        self._texts: dict[str, str] = {}

    @property
    def short(self) -> str:
        return self.commit[:7]

    @property
    def blobs(self) -> dict[str, str]:
        """``path -> blob sha`` of the commit."""
        if self._blobs is None:
            self._blobs = tree_blobs(self.repo, self.commit)
            self._files = tuple(sorted(self._blobs))
        return self._blobs

    def files(self) -> tuple[str, ...]:
        """Every file path of the commit, sorted."""
        return self._files if self._blobs is not None else tuple(sorted(self.blobs))

    def exists(self, path: str) -> bool:
        return path in self.blobs

    def preload(self, paths: Iterable[str]) -> None:
        """Read many files with one ``git cat-file --batch`` process."""
        todo = [p for p in dict.fromkeys(paths) if p not in self._texts]
        if not todo:
            return
        request = "".join(f"{self.commit}:{p}\n" for p in todo).encode()
        out = run_git(self.repo, "cat-file", "--batch", stdin=request)
        self._texts.update(parse_cat_file(out, todo))

    def read(self, path: str) -> str:
        """Text of ``path`` at the commit (``KeyError`` if the file is not in it)."""
        if path not in self._texts:
            self.preload([path])
        return self._texts[path]

    def ref(self, path: str, line: int) -> str:
        """Evidence reference ``path#L<line>@<commit>`` of the line's origin (see above)."""
        origin = blame_line(self.repo, self.commit, self.blobs, path, line)
        if origin is None:
            return f"{path}#L{line}@{self.short}"
        commit, orig_line, orig_path = origin
        return f"{orig_path}#L{orig_line}@{commit[:7]}"
