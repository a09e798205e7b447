"""The files of every commit of a first-parent history, from one ``git log --raw``.

A history replay needs ``path -> blob`` of each commit it parses (``git ls-tree -r``, one git
process per commit). :class:`TreeWalk` lists the first commit it is asked for with
``ls-tree`` and every later one by applying the changes ``git log --first-parent --raw``
reports against each commit's first parent (``--no-renames``: a rename is a deletion and an
addition), the same listing ``ls-tree`` gives: blobs only (regular files, executables,
symlinks), no submodules.
"""

from __future__ import annotations

from pathlib import Path

from substrate.connectors.gitcmd import run_git, tree_blobs

_RECORD = "\x1e"
Change = tuple[str, str]  # (path, blob after the commit; "" when the path holds no blob)


def raw_changes(repo: Path, rev: str = "HEAD") -> dict[str, tuple[Change, ...]]:
    """``sha -> changes against its first parent`` for the first-parent history of ``rev``,
    newest first (one git process)."""
    return blobs_after(raw_blob_changes(repo, rev))


def blobs_after(changes: dict[str, tuple[tuple[str, str, str], ...]]
                ) -> dict[str, tuple[Change, ...]]:
    """:func:`raw_changes` from :func:`raw_blob_changes`' answer (no second ``git log``)."""
    return {sha: tuple((path, after) for path, _, after in found)
            for sha, found in changes.items()}


def raw_blob_changes(repo: Path, rev: str = "HEAD"
                     ) -> dict[str, tuple[tuple[str, str, str], ...]]:
    """``sha -> (path, blob before, blob after)`` of each change against its first parent
    (``""``: no blob on that side), newest first (one git process)."""
    out = run_git(repo, "log", "--first-parent", "--diff-merges=first-parent", "--no-renames",
                  "--raw", "--no-abbrev", "-z", f"--format={_RECORD}%H", rev)
    changes: dict[str, tuple[tuple[str, str, str], ...]] = {}
    for block in out.decode("utf-8", "surrogateescape").split(_RECORD)[1:]:
        sha, *fields = block.split("\0")
        found: list[tuple[str, str, str]] = []
        for meta, path in zip(fields[::2], fields[1::2], strict=False):
            parts = meta.strip().lstrip(":").split()
            if len(parts) == 5:  # old mode, new mode, old blob, new blob, status
                before = parts[2] if parts[4][0] != "A" and _is_blob(parts[0]) else ""
                after = parts[3] if parts[4][0] != "D" and _is_blob(parts[1]) else ""
                found.append((path, before, after))
        changes[sha.strip()] = tuple(found)
    return changes


def _is_blob(mode: str) -> bool:
    """``ls-tree``'s ``blob`` entries: regular files (any permission bits) and symlinks."""
    return mode.startswith(("10", "12"))


class TreeWalk:
    """``path -> blob`` at commits of one first-parent history, oldest to newest."""

    def __init__(self, repo: Path, changes: dict[str, tuple[Change, ...]]) -> None:
        self.repo = repo
        self._changes = changes
        self._order = list(reversed(list(changes)))
        self._position = {sha: i for i, sha in enumerate(self._order)}
        self._at = -1
        self._tree: dict[str, str] = {}

    def at(self, commit: str) -> dict[str, str]:
        """The files of ``commit`` (a copy). A commit the walk does not know, or one older
        than the last asked for, is listed by ``git ls-tree``."""
        here = self._position.get(commit)
        if here is None:
            return tree_blobs(self.repo, commit)
        if self._at < 0 or here < self._at:
            self._tree, self._at = tree_blobs(self.repo, commit), here
        for sha in self._order[self._at + 1 : here + 1]:
            for path, blob in self._changes[sha]:
                if blob:
                    self._tree[path] = blob
                else:
                    self._tree.pop(path, None)
        self._at = here
        return dict(self._tree)
