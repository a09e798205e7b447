"""What a history replay reuses from one commit to the next gives what a fresh read gives:
blames carried over or taken from the newest kept one (``git blame since..commit``), file
lists from ``git log --raw``, file texts by blob id, name resolutions by the name index's
fingerprint (issue 12, part 3)."""

from __future__ import annotations

from pathlib import Path

from substrate.connectors import blame as blames
from substrate.connectors.aliases import NameIndex
from substrate.connectors.gitcmd import run_git, tree_blobs
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.history import list_commits
from substrate.connectors.mentions import find_mentions
from substrate.connectors.path_filter import changed_paths
from substrate.connectors.tree_walk import TreeWalk, raw_changes
from substrate.demo.gitwriter import commit_tree, identity_env, init_repo

LINES = [f"line {i}\n" for i in range(1, 9)]


def _text(changes: dict[int, str]) -> str:
    return "".join(changes.get(i, line) for i, line in enumerate(LINES, 1))


def _history(tmp_path: Path) -> Path:
    """A file changed on main, on a merged side branch, changed back (A -> B -> A), renamed,
    and an unrelated file changed in between."""
    path = init_repo(tmp_path / "repo")
    other = {"notes.md": "x\n"}
    commit_tree(path, {"a.yaml": _text({}), **other}, "one", "2026-01-01T10:00:00Z")
    commit_tree(path, {"a.yaml": _text({2: "two\n"}), **other}, "two", "2026-01-02T10:00:00Z")
    run_git(path, "checkout", "--quiet", "-b", "side")
    commit_tree(path, {"a.yaml": _text({2: "two\n", 6: "six\n"}), **other}, "side",
                "2026-01-03T10:00:00Z")
    run_git(path, "checkout", "--quiet", "main")
    commit_tree(path, {"a.yaml": _text({2: "two\n"}), "notes.md": "y\n"}, "notes",
                "2026-01-04T10:00:00Z")
    env = identity_env("Merger", "merge@example.com", "2026-01-05T10:00:00Z")
    run_git(path, "merge", "--quiet", "--no-ff", "--no-edit", "-m", "merge", "side", env=env)
    commit_tree(path, {"a.yaml": _text({6: "six\n"}), "notes.md": "y\n"}, "back",
                "2026-01-06T10:00:00Z")
    commit_tree(path, {"b.yaml": _text({6: "six\n", 8: "eight\n"}), "notes.md": "y\n"},
                "rename", "2026-01-07T10:00:00Z")
    commit_tree(path, {"b.yaml": _text({1: "first\n", 6: "six\n", 8: "eight\n"}),
                       "notes.md": "z\n"}, "edit", "2026-01-08T10:00:00Z")
    return path


def _full(repo: Path, commit: str, path: str) -> blames.Origins:
    out = run_git(repo, "blame", "--porcelain", commit, "--", path)
    return blames.parse_porcelain(out.decode(), path)


def test_kept_and_ranged_blames_equal_full_ones(tmp_path: Path) -> None:
    repo = _history(tmp_path)
    changes = changed_paths(repo)
    newest_first = list(changes)
    for commit, parent in zip(newest_first, newest_first[1:], strict=False):
        blames.declare_first_parent(repo, commit, parent, {p for _, p in changes[commit]})
    ranged = 0
    for commit in [c.sha for c in list_commits(repo)]:
        blobs = tree_blobs(repo, commit)
        for path in sorted(p for p in blobs if p.endswith(".yaml")):
            ranged += blames._since_kept(repo, commit, path) is not None
            assert blames.blame(repo, commit, blobs[path], path) == _full(repo, commit, path)
    assert ranged >= 3  # the ranged blame was taken, not only full ones


def test_blames_run_ahead_equal_the_ones_run_when_asked(tmp_path: Path) -> None:
    """A replay starts the ranged blames of the files changed since the commit it parsed
    last, side by side, before its connectors ask: the origins are those of a full blame;
    a path never blamed is not started, and what is not asked for is dropped."""
    repo = _history(tmp_path)
    changes = changed_paths(repo)
    newest_first = list(changes)
    for commit, parent in zip(newest_first, newest_first[1:], strict=False):
        blames.declare_first_parent(repo, commit, parent, {p for _, p in changes[commit]})
    commits = [c.sha for c in list_commits(repo)]
    started = 0
    for before, commit in zip(commits, commits[1:], strict=False):
        blobs = tree_blobs(repo, before)
        for path in sorted(p for p in blobs if p.endswith(".yaml")):
            blames.blame(repo, before, blobs[path], path)
        blames.blame_ahead(repo, commit, [p for _, p in changes[commit]] + ["never.yaml"])
        assert (str(repo), commit, "never.yaml") not in blames._AHEAD
        started += len(blames._AHEAD)
        after = tree_blobs(repo, commit)
        for path in sorted(p for p in after if p.endswith(".yaml")):
            assert blames.blame(repo, commit, after[path], path) == _full(repo, commit, path)
    assert started >= 3
    blames.blame_ahead(repo, commits[-1], [])
    assert not blames._AHEAD


def test_a_ranged_blame_gives_up_when_the_kept_one_is_gone(tmp_path: Path) -> None:
    repo = _history(tmp_path)
    commits = [c.sha for c in list_commits(repo)]
    blobs = tree_blobs(repo, commits[0])
    blames.blame(repo, commits[0], blobs["a.yaml"], "a.yaml")
    blames._CACHE.pop((str(repo), commits[0], "a.yaml"))
    assert blames._since_kept(repo, commits[1], "a.yaml") is None
    later = tree_blobs(repo, commits[1])
    assert blames.blame(repo, commits[1], later["a.yaml"], "a.yaml") == _full(
        repo, commits[1], "a.yaml")


def test_some_lines_blamed_at_once_cite_what_a_full_blame_cites(tmp_path: Path) -> None:
    """A file read at one commit only (comments at a replay's last commit) has the few
    lines it cites blamed together (``-L n,n`` each): the same references as a whole file's
    blame, across a merge, a revert and a rename; a line past the end is left to
    :meth:`GitSnapshot.ref`."""
    repo = _history(tmp_path)
    for commit in [c.sha for c in list_commits(repo)]:
        snap = GitSnapshot(repo, commit)
        for path in (p for p in snap.files() if p.endswith(".yaml")):
            assert blames.blame_lines(repo, commit, path, [2, 6, 8]) == {
                n: _full(repo, commit, path)[n - 1] for n in (2, 6, 8)}
            snap.prefetch_refs({path: [1, 6, 99]})
            assert (path, 99) not in snap._refs
            assert not blames.is_known(repo, commit, snap.blobs[path], path)
            fresh = GitSnapshot(repo, commit)
            for n in (1, 6):
                origin = _full(repo, commit, path)[n - 1]
                assert snap._refs[(path, n)] == f"{origin[2]}#L{origin[1]}@{origin[0][:7]}"
                assert snap.ref(path, n) == fresh.ref(path, n)
            assert blames.is_known(repo, commit, snap.blobs[path], path)  # fresh blamed it
    assert blames.blame_lines(repo, commit, "b.yaml", [99]) == {}


def test_texts_are_read_by_blob_at_every_commit(tmp_path: Path) -> None:
    repo = _history(tmp_path)
    commits = [c.sha for c in list_commits(repo)]
    for commit in commits:
        snap = GitSnapshot(repo, commit)
        snap.preload([*snap.files(), "missing.yaml"])
        for path in snap.files():
            assert snap.read(path) == run_git(repo, "show", f"{commit}:{path}").decode()
        assert not snap.exists("missing.yaml")
    try:
        GitSnapshot(repo, commits[0]).read("missing.yaml")
    except KeyError:
        pass
    else:
        raise AssertionError("a file not in the commit was read")


def test_the_tree_walk_lists_what_ls_tree_lists(tmp_path: Path) -> None:
    repo = _history(tmp_path)
    commits = [c.sha for c in list_commits(repo)]
    walk = TreeWalk(repo, raw_changes(repo))
    for commit in [*commits, commits[1], commits[-1]]:  # then back, then forward again
        assert walk.at(commit) == tree_blobs(repo, commit)
    assert "a.yaml" not in walk.at(commits[-1]) and "b.yaml" in walk.at(commits[-1])


def _index(*names: str) -> NameIndex:
    index = NameIndex()
    for name in names:
        index.create("Service", name, f"compose.yaml#L1@{name}")
    index.create("Infrastructure", "redis", "compose.yaml#L9@r")
    return index


def test_the_fingerprint_follows_what_resolution_reads() -> None:
    one, two = _index("checkout", "cart"), _index("checkout", "cart")
    assert one.fingerprint() == two.fingerprint()
    before = one.fingerprint()
    one.alias("service:checkout", "checkout", "x#L1@a")  # already its name: nothing new
    assert one.fingerprint() == before
    one.alias("service:checkout", "CheckoutSvc", "x#L2@a")
    assert one.fingerprint() != before
    assert _index("checkout").fingerprint() != two.fingerprint()
    pending = _index("checkout", "cart")
    pending.create("Service", "carts", "y#L1@b", pending_reason="fuzzy")
    assert pending.fingerprint() != two.fingerprint()


def test_mentions_are_reused_only_for_the_same_names() -> None:
    lines = [(1, "The `checkout` service calls cart-service and keeps carts in redis.")]
    first = find_mentions(lines, _index("checkout", "cart"))
    assert [m.resolution.ceid for m in first] == [
        "service:checkout", "service:cart", "infra:redis"]
    assert find_mentions(lines, _index("checkout", "cart")) == first
    fewer = find_mentions(lines, _index("checkout"))
    assert [m.resolution.ceid for m in fewer] == ["service:checkout", "infra:redis"]
