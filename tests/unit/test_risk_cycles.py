"""A dependency cycle's risk note names a bounded number of members, and the metrics row of
a member of a giant cycle lists a bounded number (its size says how many there are)."""

from __future__ import annotations

from typing import Any

from gds_jobs.centrality import MAX_LISTED_MEMBERS, NodeMetrics
from gds_jobs.risks import MAX_CYCLE_NAMES, Maxima, score


def _metric(ceid: str, members: frozenset[str]) -> NodeMetrics:
    return NodeMetrics(ceid, ceid.split(":")[1], "Service", 0.15, 0.0, 0, 1, 7, len(members),
                       False, members)


def _facts(ceid: str) -> dict[str, Any]:
    return {"member": {"ceid": ceid, "name": ceid.split(":")[1], "label": "Service"},
            "depends_on": [], "dependents": [], "incidents": [],
            "owners": [{"hop": {"type": "OWNS"}, "other": {"ceid": "team:a"}}]}


def _cycle_note(members: frozenset[str], ceid: str) -> str:
    item = score(_facts(ceid), None, Maxima(0.0, 0), _metric(ceid, members))
    factor = next(f for f in item.factors if f.factor == "dependency_cycle")
    assert factor.value == len(members)
    return factor.note


def test_a_small_cycle_names_every_other_member() -> None:
    members = frozenset({"service:a", "service:b", "service:c"})
    assert _cycle_note(members, "service:a") == \
        "in a dependency cycle of 3: service:b, service:c"


def test_a_giant_cycle_names_the_first_members_and_counts_the_rest() -> None:
    members = frozenset(f"service:s{i:05d}" for i in range(5_000))
    note = _cycle_note(members, "service:s00000")
    named = [f"service:s{i:05d}" for i in range(1, MAX_CYCLE_NAMES + 1)]
    assert note == (f"in a dependency cycle of 5000: {', '.join(named)} and "
                    f"{5_000 - 1 - MAX_CYCLE_NAMES} more")


def test_a_metrics_row_lists_a_bounded_number_of_cycle_members() -> None:
    members = frozenset(f"service:s{i:05d}" for i in range(1_000))
    row = _metric("service:s00000", members).to_dict()
    assert row["scc_size"] == 1_000
    assert row["cycle_members"] == sorted(members)[:MAX_LISTED_MEMBERS]
    small = _metric("service:a", frozenset({"service:b", "service:a"})).to_dict()
    assert small["cycle_members"] == ["service:a", "service:b"]
