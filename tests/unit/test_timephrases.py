from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from substrate.retrieval.timephrases import TimeScope, parse_time_scope

NOW = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)  # a Friday
SAT = datetime(2026, 11, 21, 9, 0, tzinfo=UTC)


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def end_of(y: int, m: int, d: int) -> datetime:
    return day(y, m, d) + timedelta(days=1) - timedelta(microseconds=1)


def test_nothing_temporal_gives_an_empty_scope() -> None:
    scope = parse_time_scope("who owns checkout", NOW)
    assert scope == TimeScope() and scope.is_empty


@pytest.mark.parametrize(
    ("text", "as_of"),
    [
        ("state of the graph on 2026-03-10", end_of(2026, 3, 10)),
        ("state of the graph on March 10th", end_of(2026, 3, 10)),
        ("as of 10 March 2025", end_of(2025, 3, 10)),
        ("as of the 3rd of Dec", end_of(2025, 12, 3)),  # no year: latest not after now
        ("graph on Sept 3, 2024", end_of(2024, 9, 3)),
        ("at 2026-10-01T12:30:00Z", datetime(2026, 10, 1, 12, 30, tzinfo=UTC)),
        ("at 2026-10-01T12:30+02:00", datetime(2026, 10, 1, 10, 30, tzinfo=UTC)),
        ("state yesterday", end_of(2026, 11, 19)),
        ("state today", end_of(2026, 11, 20)),
        ("state 2 days ago", end_of(2026, 11, 18)),
        ("state 3 hours ago", NOW - timedelta(hours=3)),
    ],
)
def test_points_in_time(text: str, as_of: datetime) -> None:
    scope = parse_time_scope(text, NOW)
    assert (scope.as_of, scope.start, scope.end) == (as_of, None, None)


def test_last_weekday_is_strictly_before_today_and_a_bare_weekday_may_be_today() -> None:
    assert parse_time_scope("graph last Friday", NOW).as_of == end_of(2026, 11, 13)
    assert parse_time_scope("graph on Friday", NOW).as_of == end_of(2026, 11, 20)
    assert parse_time_scope("graph last Friday", SAT).as_of == end_of(2026, 11, 20)
    assert parse_time_scope("graph last Monday", NOW).as_of == end_of(2026, 11, 16)


def test_n_days_before_an_event_day_keeps_that_whole_day() -> None:
    scope = parse_time_scope("What changed in the three days before last Friday's outage?", NOW)
    assert (scope.start, scope.end) == (day(2026, 11, 10), day(2026, 11, 14))
    assert scope.phrases == ("three days before last Friday",)


def test_before_an_event_versus_before_a_date() -> None:
    event = parse_time_scope("What changed before last Friday's incident?", NOW)
    assert (event.start, event.end) == (None, day(2026, 11, 14))
    plain = parse_time_scope("what changed before 2026-03-10", NOW)
    assert (plain.start, plain.end) == (None, day(2026, 3, 10))


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("changes between 2026-03-01 and 2026-03-05", day(2026, 3, 1), day(2026, 3, 6)),
        ("from March 1 to March 3", day(2026, 3, 1), day(2026, 3, 4)),
        ("changes since 2026-03-01", day(2026, 3, 1), None),
        ("changes after 2026-03-01", day(2026, 3, 2), None),
        ("a week after 2026-03-01", day(2026, 3, 1), day(2026, 3, 9)),
        ("what changed on 2026-03-10", day(2026, 3, 10), day(2026, 3, 11)),
        ("what changed last week", NOW - timedelta(weeks=1), NOW),
        ("deploys in the past 2 days", NOW - timedelta(days=2), NOW),
        ("anything over the last couple of hours", NOW - timedelta(hours=2), NOW),
    ],
)
def test_windows(text: str, start: datetime | None, end: datetime | None) -> None:
    scope = parse_time_scope(text, NOW)
    assert (scope.start, scope.end, scope.as_of) == (start, end, None)


def test_may_the_verb_is_not_a_month() -> None:
    assert parse_time_scope("which 2 may fail", NOW).is_empty
    assert parse_time_scope("state on May 2", NOW).as_of == end_of(2026, 5, 2)
    assert parse_time_scope("state on 2 may 2025", NOW).as_of == end_of(2025, 5, 2)


def test_invalid_dates_are_ignored() -> None:
    assert parse_time_scope("state on 2026-02-31", NOW).is_empty
    assert parse_time_scope("state on February 30", NOW).is_empty


def test_naive_now_is_utc() -> None:
    scope = parse_time_scope("yesterday", datetime(2026, 11, 20, 1, 0))
    assert scope.as_of == end_of(2026, 11, 19)


def test_recorded_or_introduced_in_a_month_is_a_window() -> None:
    """"Which decisions were recorded in July 2026?" asks for what a window added."""
    from datetime import UTC, datetime

    from substrate.retrieval.timephrases import parse_time_scope
    now = datetime(2026, 11, 1, tzinfo=UTC)
    for q in ("Which decisions were recorded in July 2026?",
              "Which services were introduced in July 2026?"):
        scope = parse_time_scope(q, now)
        assert (scope.start, scope.end, scope.as_of) == (
            datetime(2026, 7, 1, tzinfo=UTC), datetime(2026, 8, 1, tzinfo=UTC), None), q
    assert parse_time_scope("Who owned ui in July 2026?", now).as_of is not None
