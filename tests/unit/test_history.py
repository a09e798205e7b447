"""First-parent history: order, timestamps, since/until, every-Nth, one batch per commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from substrate.connectors.gitsource import GitSnapshot, run_git
from substrate.connectors.history import first_parent_commits, history_batches, list_commits
from substrate.demo.gitwriter import commit_tree, identity_env, init_repo

DAYS = ["2026-08-03", "2026-08-05", "2026-08-10", "2026-08-12", "2026-08-20"]


def _svc(names: list[str]) -> dict[str, str]:
    return {f"services/{n}/README.md": f"# {n}\n" for n in names}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Five commits on main (services a, +b, +c, -a, +d) and a merged side branch."""
    path = init_repo(tmp_path / "repo")
    states = [["a"], ["a", "b"], ["a", "b", "c"], ["b", "c"]]
    for day, names in zip(DAYS[:4], states, strict=True):
        commit_tree(path, _svc(names), f"state {'+'.join(names)}", f"{day}T10:00:00Z")
    run_git(path, "checkout", "--quiet", "-b", "side")
    commit_tree(path, _svc(["b", "c", "x"]), "side work", "2026-08-15T10:00:00Z")
    run_git(path, "checkout", "--quiet", "main")
    env = identity_env("Merger", "merge@example.com", f"{DAYS[4]}T10:00:00Z")
    run_git(path, "merge", "--quiet", "--no-ff", "--no-edit", "-m", "merge side", "side", env=env)
    commit_tree(path, _svc(["b", "c", "x", "d"]), "add d", "2026-08-21T08:30:00+02:00")
    return path


def test_first_parent_order_and_fields(repo: Path) -> None:
    commits = list_commits(repo)
    assert [c.subject for c in commits] == [
        "state a", "state a+b", "state a+b+c", "state b+c", "merge side", "add d",
    ]  # fmt: skip
    assert commits[0].timestamp == "2026-08-03T10:00:00Z"
    assert commits[-1].timestamp == "2026-08-21T06:30:00Z"  # normalised to UTC
    assert commits[0].author == "Test Author" and len(commits[0].sha) == 40
    assert first_parent_commits is list_commits


def test_since_until_and_every(repo: Path) -> None:
    subjects = [c.subject for c in list_commits(repo, since="2026-08-05", until="2026-08-12")]
    assert subjects == ["state a+b", "state a+b+c", "state b+c"]
    late = list_commits(repo, since="2026-08-20T12:00:00+00:00")
    assert [c.subject for c in late] == ["add d"]
    every = [c.subject for c in list_commits(repo, every=2)]
    assert every == ["state a", "state a+b+c", "merge side", "add d"]
    no_last = [c.subject for c in list_commits(repo, every=4, include_last=False)]
    assert no_last == ["state a", "merge side"]
    with pytest.raises(ValueError):
        list_commits(repo, every=0)


def test_one_batch_per_commit(repo: Path) -> None:
    seen = [
        sorted(n.ceid for n in batch.nodes if n.label == "Service")
        for _, batch in history_batches(repo)
    ]
    assert seen == [
        ["service:a"],
        ["service:a", "service:b"],
        ["service:a", "service:b", "service:c"],
        ["service:b", "service:c"],
        ["service:b", "service:c", "service:x"],
        ["service:b", "service:c", "service:d", "service:x"],
    ]


def test_snapshot_reads_without_checkout(repo: Path) -> None:
    first = list_commits(repo)[0]
    snap = GitSnapshot(repo, first.sha)
    assert snap.files() == ("services/a/README.md",)
    assert snap.read("services/a/README.md") == "# a\n"
    assert snap.ref("services/a/README.md", 1) == f"services/a/README.md#L1@{first.sha[:7]}"
    assert (repo / "services/d/README.md").exists()  # the working tree was not touched


def test_evidence_names_the_commit_that_wrote_the_line(tmp_path: Path) -> None:
    path = init_repo(tmp_path / "blame")
    base = {"services/a/README.md": "# a\n", "services/b/README.md": "# b\n"}
    compose = "services:\n  a:\n    image: x/a:1\n    environment:\n      B_URL: http://b:80\n"
    first = commit_tree(
        path, {**base, "docker-compose.yml": compose}, "one", "2026-08-03T10:00:00Z"
    )
    moved = "# local stack\n\n" + compose + "  b:\n    image: x/b:1\n"
    second = commit_tree(path, {**base, "docker-compose.yml": moved}, "two", "2026-08-04T10:00:00Z")
    refs = []
    for _, batch in history_batches(path):
        calls = next(e for e in batch.edges if e.type == "CALLS")
        refs.append(calls.evidence_ref)
    assert refs == [f"docker-compose.yml#L5@{first[:7]}"] * 2  # stable although now on line 7
    line = run_git(path, "show", f"{first}:docker-compose.yml").decode().splitlines()[4]
    assert "B_URL" in line
    assert GitSnapshot(path, second).ref("docker-compose.yml", 1) == (
        f"docker-compose.yml#L1@{second[:7]}"
    )
