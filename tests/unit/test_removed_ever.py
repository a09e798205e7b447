""""Which services were removed?" with no window: which questions ask it, their route, and
how the answer reads."""

from __future__ import annotations

from datetime import UTC, datetime

from substrate.retrieval.composers import Citations, removed_ever
from substrate.retrieval.history_lifecycle import removed_labels
from substrate.retrieval.router import Intent, classify

NOW = datetime(2026, 11, 28, tzinfo=UTC)


def test_which_questions_list_the_removed_ones() -> None:
    assert removed_labels("Which services were removed?") == ["Service"]
    assert removed_labels("What datastores have been decommissioned?") == ["Infrastructure"]
    assert removed_labels("Which components were ever deleted?") == ["Service",
                                                                     "Infrastructure"]
    assert removed_labels("When was legacy-coupons removed?") is None  # one, named
    assert removed_labels("Which services were added?") is None
    assert classify("Which services were removed?", NOW).intent is Intent.TEMPORAL


def test_each_removed_one_with_when_it_went_and_its_defining_line() -> None:
    snap = {"valid_at": "2026-09-01T10:00:00+00:00", "commit": "43cf47d4aa",
            "note": "43cf47d4 promotions replace legacy-coupons (#422)"}
    first = {"valid_at": "2026-08-01T10:00:00+00:00", "commit": "11aa22bb33", "note": ""}
    fact = {"labels": ["Service"], "removed_ever": [{
        "subject": {"ceid": "service:legacy-coupons", "name": "legacy-coupons"},
        "first": first, "removed": snap,
        "hop": {"type": "REMOVED", "evidence_ref": "docker-compose.yml#L80@11aa22b"}}]}
    cites = Citations()
    assert removed_ever(fact, cites) == (
        '1 service(s) removed over the history: legacy-coupons (removed 2026-09-01 (commit '
        '43cf47d4 "promotions replace legacy-coupons (#422)"); defined[1] since 2026-08-01 '
        "(commit 11aa22bb)).")
    assert removed_ever({"labels": ["Service"], "removed_ever": []}, Citations()).startswith(
        "No service was removed")
