"""The UC-06 answer's wording (``incidents.incident_note``): a quiet window, a large window
read only near the incident, and both with nothing to list."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from substrate.retrieval.incidents import IncidentDiff, incident_note
from substrate.retrieval.temporal import Window

WHEN = datetime(2026, 1, 17, 9, tzinfo=UTC)
LAST = datetime(2026, 1, 12, 9, tzinfo=UTC)
INCIDENT = {"incident": {"name": "s outage", "ceid": "incident:s"},
            "links": [{"target": {"name": "s", "ceid": "service:s", "label": "Service"}}]}


def fact(n: int) -> dict[str, Any]:
    change = {"kind": "node", "id": f"service:n{n}", "snapshot": {
        "version": 7, "valid_at": LAST.isoformat(), "source": "scale", "note": "scale"}}
    return {"change": change, "distance": 1, "cited_cause": False,
            "summary": f"Service service:n{n} added", "rank": n}


def diff(ranked: list[dict[str, Any]], quiet: bool, recorded: int | None) -> IncidentDiff:
    window = Window(LAST - timedelta(days=3), WHEN, 3, 7, LAST) if quiet else \
        Window(WHEN - timedelta(days=3), WHEN, 6, 7, LAST)
    return IncidentDiff(INCIDENT, WHEN, False, "named", timedelta(days=3), window, [], ranked,
                        Window(WHEN - timedelta(days=3), WHEN, 7, 7, LAST) if quiet else None,
                        recorded, 2 if recorded else None)


def test_a_quiet_window_says_so_and_gives_the_changes_up_to_the_last_snapshot() -> None:
    note = incident_note(diff([fact(1), fact(2)], quiet=True, recorded=None))
    assert ("nothing: no snapshot of the tenant changed the graph between "
            "2026-01-14T09:00:00+00:00 and the incident. The latest change before it was 5 "
            "days earlier; what changed in the 3 days up to it (2026-01-09T09:00:00+00:00 to "
            "2026-01-12T09:00:00+00:00): 2 change(s) in 1 snapshot(s)") in note
    assert "Service service:n1 added; Service service:n2 added" in note


def test_a_large_window_says_how_much_it_records_and_how_far_it_read() -> None:
    note = incident_note(diff([fact(1)], quiet=False, recorded=12_000))
    assert ("1 change(s) in 1 snapshot(s), closest to the affected services first. The "
            "window records 12000 changes; only those within 2 hops of the incident's "
            "services were read.") in note


def test_nothing_near_a_large_window_is_not_called_nothing_changed() -> None:
    note = incident_note(diff([], quiet=False, recorded=12_000))
    assert note.endswith("): none near the incident's services. The window records 12000 "
                         "changes; only those within 2 hops of the incident's services were "
                         "read.")
    assert "no snapshot" not in note
    empty = incident_note(diff([], quiet=False, recorded=None))
    assert "nothing: no snapshot of the tenant changed the graph between" in empty
