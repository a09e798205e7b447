"""Allen's interval algebra over validity intervals (TemporalRetriever, "Temporal Relations").

An interval is ``[start, end)`` over any totally ordered values (snapshot versions or
timestamps); ``end`` is ``None`` while the interval is still open (valid now), which compares
as later than every finite value. Exactly one of the thirteen relations holds between two
proper intervals (``start < end``):

    before / after           a ends before b starts            a.end <  b.start
    meets / met_by           a ends exactly where b starts     a.end == b.start
    overlaps / overlapped_by a starts first, they share a part  a.start < b.start < a.end < b.end
    starts / started_by      same start, a ends first
    during / contains        a strictly inside b
    finishes / finished_by   same end, a starts later
    equals                   same start and end

Two point intervals (``start == end``, e.g. an incident instant) are allowed too; the same
definitions then apply with ``<=``/``<`` as written, which is the usual point-interval reading.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar


class _Ordered(Protocol):
    def __lt__(self, other: Any, /) -> bool: ...


T = TypeVar("T", bound=_Ordered)

RELATIONS = (
    "before", "meets", "overlaps", "starts", "during", "finishes", "equals",
    "finished_by", "contains", "started_by", "overlapped_by", "met_by", "after",
)
INVERSE = {r: RELATIONS[len(RELATIONS) - 1 - i] for i, r in enumerate(RELATIONS)}

# Handy groups for questions such as "while X", "did A overlap B" (any shared time).
INTERSECTING = frozenset(
    {"overlaps", "overlapped_by", "starts", "started_by", "during", "contains",
     "finishes", "finished_by", "equals"})


@dataclass(frozen=True)
class Interval(Generic[T]):
    start: T
    end: T | None = None  # None: still open

    def __post_init__(self) -> None:
        if self.end is not None and self.end < self.start:
            raise ValueError(f"interval ends before it starts: {self.start!r} > {self.end!r}")


def _lt(a: Any, b: Any) -> bool:
    """``a < b`` where ``None`` is +infinity (an open end)."""
    if a is None:
        return False
    if b is None:
        return True
    return bool(a < b)


def _eq(a: Any, b: Any) -> bool:
    return not _lt(a, b) and not _lt(b, a)


def relation(a: Interval[Any], b: Interval[Any]) -> str:
    """The one Allen relation that holds from ``a`` to ``b``."""
    if _lt(a.end, b.start):
        return "before"
    if _lt(b.end, a.start):
        return "after"
    if _eq(a.end, b.start) and not _eq(a.start, b.start):
        return "meets"
    if _eq(b.end, a.start) and not _eq(a.start, b.start):
        return "met_by"
    if _eq(a.start, b.start):
        if _eq(a.end, b.end):
            return "equals"
        return "starts" if _lt(a.end, b.end) else "started_by"
    if _eq(a.end, b.end):
        return "finishes" if _lt(b.start, a.start) else "finished_by"
    if _lt(a.start, b.start):
        return "contains" if _lt(b.end, a.end) else "overlaps"
    return "during" if _lt(a.end, b.end) else "overlapped_by"


def holds(a: Interval[Any], b: Interval[Any], *relations: str) -> bool:
    """Whether one of ``relations`` (names from RELATIONS, or "intersects") holds."""
    wanted = set(relations)
    if "intersects" in wanted:
        wanted |= INTERSECTING
    unknown = wanted - set(RELATIONS) - {"intersects"}
    if unknown:
        raise ValueError(f"unknown Allen relation(s) {sorted(unknown)}")
    return relation(a, b) in wanted
