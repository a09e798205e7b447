"""Read one commit of a local git checkout without checking it out.

Only the ``git`` command line is used: ``git ls-tree -r <commit>`` lists the files and
``git cat-file --batch`` (the batched form of ``git show <commit>:<path>``) reads them, by
blob id: a blob read at one commit is not read again at the next (a history replay re-reads
only the files each commit changed; the texts are kept up to ``TEXT_CACHE_CHARS``).
"""

from __future__ import annotations

import posixpath
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

from substrate.connectors.blame import blame_line, blame_lines, is_known
from substrate.connectors.gitcmd import (
    GitError,
    read_blobs,
    resolve_commit,
    run_git,
    tree_blobs,
)

__all__ = ["GitError", "GitSnapshot", "resolve_commit", "run_git", "tree_blobs"]

TEXT_CACHE_CHARS = 64_000_000
_TEXTS: OrderedDict[str, str] = OrderedDict()  # blob id -> text, least recently used first
_cached_chars = 0


def _cached_text(blob: str) -> str | None:
    text = _TEXTS.get(blob)
    if text is not None:
        _TEXTS.move_to_end(blob)
    return text


def _keep_text(blob: str, text: str) -> None:
    global _cached_chars
    if blob not in _TEXTS:
        _TEXTS[blob] = text
        _cached_chars += len(text)
    while _cached_chars > TEXT_CACHE_CHARS and _TEXTS:
        _cached_chars -= len(_TEXTS.popitem(last=False)[1])


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
        self._refs: dict[tuple[str, int], str] = {}
        self._folders: dict[str, tuple[str, ...]] | None = None

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

    def in_folder(self, folder: str) -> tuple[str, ...]:
        """The paths of the files directly in ``folder`` ("" for the root), sorted (indexed
        once per snapshot: a folder's project files are looked up per service)."""
        if self._folders is None:
            grouped: dict[str, list[str]] = {}
            for path in self.files():
                grouped.setdefault(posixpath.dirname(path), []).append(path)
            self._folders = {k: tuple(v) for k, v in grouped.items()}
        return self._folders.get(folder.strip("/"), ())

    def exists(self, path: str) -> bool:
        return path in self.blobs

    def preload(self, paths: Iterable[str]) -> None:
        """Read many files with one ``git cat-file --batch`` (none when every blob was read
        before; see :func:`~substrate.connectors.gitcmd.read_blobs`); a path not in the
        commit is not read."""
        todo = []
        for path in dict.fromkeys(paths):
            blob = self.blobs.get(path)
            if path in self._texts or blob is None:
                continue
            text = _cached_text(blob)
            if text is None:
                todo.append(path)
            else:
                self._texts[path] = text
        if not todo:
            return
        blobs = list(dict.fromkeys(self.blobs[p] for p in todo))
        texts = read_blobs(self.repo, blobs)
        for blob, text in texts.items():
            _keep_text(blob, text)
        self._texts.update((p, texts[self.blobs[p]]) for p in todo if self.blobs[p] in texts)

    def read(self, path: str) -> str:
        """Text of ``path`` at the commit (``KeyError`` if the file is not in it)."""
        if path not in self._texts:
            self.preload([path])
        return self._texts[path]

    def prefetch_refs(self, wanted: dict[str, Iterable[int]]) -> None:
        """Find the origins of a few lines per file at once (``path -> line numbers``), one
        ranged ``git blame`` per file whose blame is not known already (:meth:`ref` then
        answers from them): for files read at one commit only, where a whole file's blame
        would not be reused."""
        for path, lines in wanted.items():
            blob = self.blobs.get(path)
            if blob is None or is_known(self.repo, self.commit, blob, path):
                continue
            text = self.read(path)
            count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
            todo = {n for n in lines if 1 <= n <= count and (path, n) not in self._refs}
            if not todo:
                continue
            for n, origin in blame_lines(self.repo, self.commit, path, todo).items():
                self._refs[(path, n)] = f"{origin[2]}#L{origin[1]}@{origin[0][:7]}"

    def ref(self, path: str, line: int) -> str:
        """Evidence reference ``path#L<line>@<commit>`` of the line's origin (see above;
        each line's found once per snapshot)."""
        key = (path, line)
        found = self._refs.get(key)
        if found is None:
            origin = blame_line(self.repo, self.commit, self.blobs, path, line)
            found = f"{path}#L{line}@{self.short}" if origin is None else \
                f"{origin[2]}#L{origin[1]}@{origin[0][:7]}"
            self._refs[key] = found
        return found
