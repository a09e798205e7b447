"""Allen's thirteen interval relations, checked against hand-built intervals."""

from __future__ import annotations

import itertools

import pytest

from substrate.retrieval.allen import INVERSE, RELATIONS, Interval, holds, relation

# a, b and the relation from a to b, drawn on a number line by hand.
HAND_BUILT = [
    (Interval(1, 3), Interval(5, 8), "before"),
    (Interval(1, 5), Interval(5, 8), "meets"),
    (Interval(1, 6), Interval(5, 8), "overlaps"),
    (Interval(5, 6), Interval(5, 8), "starts"),
    (Interval(6, 7), Interval(5, 8), "during"),
    (Interval(6, 8), Interval(5, 8), "finishes"),
    (Interval(5, 8), Interval(5, 8), "equals"),
    (Interval(1, 8), Interval(5, 8), "finished_by"),
    (Interval(1, 9), Interval(5, 8), "contains"),
    (Interval(5, 9), Interval(5, 8), "started_by"),
    (Interval(6, 9), Interval(5, 8), "overlapped_by"),
    (Interval(8, 9), Interval(5, 8), "met_by"),
    (Interval(9, 12), Interval(5, 8), "after"),
]


@pytest.mark.parametrize(("a", "b", "expected"), HAND_BUILT, ids=[r for *_, r in HAND_BUILT])
def test_each_relation_on_hand_built_intervals(a: Interval[int], b: Interval[int],
                                               expected: str) -> None:
    assert relation(a, b) == expected
    assert relation(b, a) == INVERSE[expected]


def test_the_hand_built_cases_cover_all_thirteen() -> None:
    assert sorted(r for *_, r in HAND_BUILT) == sorted(RELATIONS) and len(RELATIONS) == 13


def test_exactly_one_relation_and_inverse_symmetry_over_a_grid() -> None:
    spans = [Interval(s, e) for s, e in itertools.combinations(range(6), 2)]
    seen = set()
    for a, b in itertools.product(spans, repeat=2):
        r = relation(a, b)
        seen.add(r)
        assert relation(b, a) == INVERSE[r]
        assert sum(holds(a, b, x) for x in RELATIONS) == 1
    assert seen == set(RELATIONS)


def test_open_intervals_end_after_everything() -> None:
    still_valid = Interval(5)  # valid since version 5, not closed
    assert relation(Interval(1, 3), still_valid) == "before"
    assert relation(Interval(6, 9), still_valid) == "during"
    assert relation(Interval(5), still_valid) == "equals"
    assert relation(Interval(3), still_valid) == "finished_by"


def test_point_intervals_such_as_an_incident_instant() -> None:
    ownership = Interval("2026-01-01", "2026-03-01")
    assert relation(Interval("2026-02-10", "2026-02-10"), ownership) == "during"
    assert relation(Interval("2026-01-01", "2026-01-01"), ownership) == "starts"
    assert holds(Interval("2026-02-10", "2026-02-10"), ownership, "intersects")
    assert not holds(Interval("2026-04-01", "2026-04-01"), ownership, "intersects")


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="ends before"):
        Interval(5, 1)
    with pytest.raises(ValueError, match="unknown Allen"):
        holds(Interval(1, 2), Interval(3, 4), "near")
