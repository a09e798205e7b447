"""A history parsed ahead in a child process yields what parsing it in place yields; the
child's failures reach the replaying process; one long-running ``git cat-file --batch``
reads what one process per read does (issue 12, part 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from substrate.connectors import replay_parse
from substrate.connectors.gitcmd import (
    CatFile,
    GitError,
    batch_reader,
    read_blobs,
    run_git,
    tree_blobs,
)
from substrate.connectors.history import list_commits
from substrate.connectors.replay_parse import HistoryParser, ParseFailed, parsed_ahead
from substrate.demo.build_repo import build_demo_repo
from substrate.demo.gitwriter import identity_env


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo repository and two commits no connector reads a file of (the path filter
    skips them)."""
    repo = build_demo_repo(tmp_path_factory.mktemp("demo") / "acme-shop")
    for day, text in (("2027-01-02", "one\n"), ("2027-01-03", "two\n")):
        (repo / "NOTES.txt").write_text(text)
        run_git(repo, "add", "NOTES.txt")
        run_git(repo, "commit", "-q", "-m", f"notes {day}",
                env=identity_env("Nora", "nora@example.com", f"{day}T10:00:00Z"))
    return repo


def _in_place(repo: Path, shas: list[str], path_filter: bool) -> list[str]:
    return [repr(p) for p in HistoryParser(repo, shas, path_filter).outcomes()]


@pytest.mark.parametrize("path_filter", [True, False])
def test_parsed_ahead_equals_parsed_in_place(demo: Path, path_filter: bool) -> None:
    shas = [c.sha for c in list_commits(demo)]
    to_parse, outcomes = parsed_ahead(demo, shas, path_filter)
    ahead = [repr(p) for p in outcomes]
    assert ahead == _in_place(demo, shas, path_filter)
    assert [p.split("'")[1] for p in ahead] == shas  # one outcome per commit, in order
    if path_filter:
        assert to_parse is not None and 0 < len(to_parse) < len(shas)
        assert sum("parsed=True" in p for p in ahead) == len(to_parse)
    else:
        assert to_parse is None and all("parsed=True" in p for p in ahead)
    assert any("batch=GraphBatch" in p for p in ahead)


def test_a_single_commit_is_parsed_in_place(demo: Path) -> None:
    head = list_commits(demo)[-1].sha
    _, outcomes = parsed_ahead(demo, [head], True)
    (only,) = list(outcomes)
    assert only.sha == head and only.parsed and only.batch is not None and only.batch.nodes


def test_a_failure_in_the_child_is_raised_here(demo: Path) -> None:
    shas = [c.sha for c in list_commits(demo)][:3] + ["0" * 40]
    _, outcomes = parsed_ahead(demo, shas, False)
    with pytest.raises(GitError, match="0000000"):
        list(outcomes)


def test_a_child_that_dies_is_reported(demo: Path) -> None:
    shas = [c.sha for c in list_commits(demo)]
    _, outcomes = parsed_ahead(demo, shas, False)
    first = next(outcomes)
    assert first.sha == shas[0]
    child = cast(Any, outcomes).gi_frame.f_locals["self"]  # the generator's _Child
    child.proc.kill()
    with pytest.raises(ParseFailed, match="ended"):
        for _ in range(len(shas) + replay_parse.LOOKAHEAD):
            next(outcomes)


def test_closing_early_stops_the_child(demo: Path) -> None:
    shas = [c.sha for c in list_commits(demo)]
    _, outcomes = parsed_ahead(demo, shas, False)
    next(outcomes)
    child = cast(Any, outcomes).gi_frame.f_locals["self"]  # the generator's _Child
    outcomes.close()
    assert child.proc.returncode is not None
    child.reader.join(timeout=10)
    assert not child.reader.is_alive()


def test_one_cat_file_reads_what_one_per_read_does(demo: Path) -> None:
    blobs = sorted(set(tree_blobs(demo, "HEAD").values()))
    missing = "f" * 40
    asked = [*blobs, missing, *blobs[:2]]
    alone = read_blobs(demo, asked)
    assert missing not in alone and set(alone) == set(blobs)
    with batch_reader(demo):
        assert read_blobs(demo, asked) == alone
        with batch_reader(demo):  # nested: the same reader
            assert read_blobs(demo, blobs[:1]) == {blobs[0]: alone[blobs[0]]}
    reader = CatFile(demo)
    reader.SLICE = 2  # requests and answers in several slices
    try:
        assert reader.read(asked) == alone
    finally:
        reader.close()
