"""Calendar periods and releases in questions (substrate/retrieval/timeperiods.py), as the
router sees them through ``parse_time_scope``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from substrate.retrieval.timeperiods import release_pattern, release_reference
from substrate.retrieval.timephrases import parse_time_scope

NOW = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)  # a Friday


def d(y: int, m: int, day: int = 1) -> datetime:
    return datetime(y, m, day, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("What changed in March 2024?", d(2024, 3), d(2024, 4)),
        ("What changed in Mar. 2024?", d(2024, 3), d(2024, 4)),
        ("What changed in February 2024?", d(2024, 2), d(2024, 3)),  # leap month end
        ("What changed in December 2023?", d(2023, 12), d(2024, 1)),
        ("What changed in Q3 2024?", d(2024, 7), d(2024, 10)),
        ("What changed in 2024-Q1?", d(2024, 1), d(2024, 4)),
        ("what changed in the third quarter of 2023", d(2023, 7), d(2023, 10)),
        ("what changed in 2023", d(2023, 1), d(2024, 1)),
        ("what changed between March 2024 and June 2024", d(2024, 3), d(2024, 7)),
        ("what changed between 2024-01-05 and 2024-02-01?", d(2024, 1, 5), d(2024, 2, 2)),
        ("what changed from Q1 2024 to Q2 2024", d(2024, 1), d(2024, 7)),
        ("what changed between January and March", d(2026, 1), d(2026, 4)),
        ("what changed this month", d(2026, 11), d(2026, 12)),
        ("what changed last quarter", d(2026, 7), d(2026, 10)),
        ("what changed on 03/10/2024", d(2024, 3, 10), d(2024, 3, 11)),
        ("what changed on 2024/03/10", d(2024, 3, 10), d(2024, 3, 11)),
        ("what changed on 25.12.2023", d(2023, 12, 25), d(2023, 12, 26)),
    ],
)
def test_windows(text: str, start: datetime, end: datetime) -> None:
    scope = parse_time_scope(text, NOW)
    assert (scope.start, scope.end, scope.as_of) == (start, end, None)


def test_a_month_without_a_year_is_the_latest_begun_and_december_is_last_year() -> None:
    assert parse_time_scope("what changed in December", NOW).start == d(2025, 12)
    assert parse_time_scope("what changed in November", NOW).start == d(2026, 11)


def test_since_a_period_opens_the_window() -> None:
    scope = parse_time_scope("what changed since Q2", NOW)
    assert (scope.start, scope.end) == (d(2026, 4), None)
    assert parse_time_scope("what changed before March 2024", NOW).end == d(2024, 3)


def test_a_period_pins_other_families_at_its_last_instant() -> None:
    scope = parse_time_scope("Who owned frontend in 2021?", NOW)
    assert scope.as_of == d(2022, 1) - timedelta(microseconds=1) and scope.start is None
    scope = parse_time_scope("What did ledgerwriter depend on in June 2020?", NOW)
    assert scope.as_of == d(2020, 7) - timedelta(microseconds=1)


def test_last_week_is_the_past_seven_days() -> None:
    scope = parse_time_scope("What changed last week?", NOW)
    assert (scope.start, scope.end) == (NOW - timedelta(days=7), NOW)


@pytest.mark.parametrize("text", ["Which services may fail?", "what listens on port 8080",
                                  "who calls march-service", "list 2024 rows", "top 3 risks"])
def test_no_period_where_there_is_none(text: str) -> None:
    assert parse_time_scope(text, NOW).is_empty


@pytest.mark.parametrize(
    ("text", "expected"),
    [("What changed since v1.2?", ("since", "1.2")),
     ("what changed since release 1.6.0", ("since", "1.6.0")),
     ("who owned ui before version 0.5.0", ("before", "0.5.0")),
     ("dependencies as of v0.4.1", ("at", "0.4.1"))],
)
def test_releases_are_kept_for_the_history_to_date(text: str, expected: tuple[str, str]) -> None:
    scope = parse_time_scope(text, NOW)
    assert scope.release == expected and not scope.is_empty
    assert release_reference("what changed since last week") is None


def test_release_subjects() -> None:
    rx = release_pattern("0.4.1")
    assert rx.search("release/v0.4.1 (#439)")
    assert rx.search("Merge pull request #458 from org/release/v0.4.1")
    assert not rx.search("release/v0.4.10 (#501)")
    assert release_pattern("1.6.2").search("chore(main): release 1.6.2 (#1087)")
