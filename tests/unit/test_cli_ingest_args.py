"""``substrate ingest``'s numeric options: a whole number of at least 1, refused by argparse
(exit 2, one error line) before anything connects."""

from __future__ import annotations

import pytest

from substrate.cli import build_parser
from substrate.settings import Settings


def test_the_batch_size_defaults_to_the_import_s_own() -> None:
    args = build_parser().parse_args(["ingest", "jsonl", "org.jsonl"])
    assert args.batch_size is None  # ingest_jsonl's BATCH_RECORDS then applies
    args = build_parser().parse_args(["ingest", "jsonl", "org.jsonl", "--batch-size", "7"])
    assert args.batch_size == 7


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--batch-size", "0", "must be at least 1, got 0"),
    ("--batch-size", "-5", "must be at least 1, got -5"),
    ("--batch-size", "abc", "not a whole number: 'abc'"),
    ("--every", "0", "must be at least 1, got 0"),
])
def test_a_bad_number_exits_2_with_one_line(
    option: str, value: str, message: str, capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["ingest", "jsonl", "org.jsonl", option, value])
    assert info.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert errors == [f"substrate ingest: error: argument {option}: {message}"]


def test_jsonl_takes_several_files_in_order() -> None:
    args = build_parser().parse_args(["ingest", "jsonl", "b.jsonl", "a.jsonl", "c.jsonl"])
    assert args.path == ["b.jsonl", "a.jsonl", "c.jsonl"]


def test_git_takes_one_repository(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["ingest", "git", "repo-a", "repo-b"])
    assert args.handler(Settings.from_env({}), args) == 2  # refused before anything connects
    assert capsys.readouterr().out.splitlines() == ["error: ingest git takes one repository path"]
