"""Edge diffing (substrate/graph/diff.py): a stated edge against the stored one of its key."""

from __future__ import annotations

from typing import Any

from substrate.graph.diff import ChangeSet, diff_edges, edge_key, edge_payload
from substrate.graph.records import EdgeRecord

EDGE = EdgeRecord("CALLS", "service:a", "service:b", "compose.yml#L3@abc", 0.9, 2.0, "git",
                  {"protocol": "http", "ports": [80, 443]})


def stored(edge: EdgeRecord, **changed: Any) -> dict[str, Any]:
    """The edge as graph/live_edges returns it (its properties in another order)."""
    row = {"key": edge_key(edge), **edge_payload(edge), **changed}
    return dict(reversed(list(row.items())))


def diff(edge: EdgeRecord, live: dict[str, Any] | None) -> ChangeSet:
    changes = ChangeSet()
    seen = diff_edges([edge], {} if live is None else {edge_key(edge): live}, changes)
    assert seen == {edge_key(edge)}
    return changes


def test_a_new_edge_is_added() -> None:
    changes = diff(EDGE, None)
    assert changes.edge_adds == [(edge_key(EDGE), EDGE)] and not changes.edge_closes


def test_the_same_edge_stated_again_changes_nothing_whatever_the_order_of_its_keys() -> None:
    live = stored(EDGE, props={"ports": [80, 443], "protocol": "http"})
    assert diff(EDGE, live).empty


def test_a_changed_evidence_confidence_or_property_replaces_the_edge() -> None:
    for changed in ({"evidence_ref": "compose.yml#L4@def"}, {"confidence": 0.8},
                    {"props": {"protocol": "grpc", "ports": [80, 443]}},
                    {"props": {"protocol": "http", "ports": [80, 443.0]}}):  # 443 is not 443.0
        live = stored(EDGE, **changed)
        changes = diff(EDGE, live)
        assert changes.edge_closes == [(edge_key(EDGE), live)], changed
        assert changes.edge_adds == [(edge_key(EDGE), EDGE)], changed


def test_stored_values_json_does_not_know_compare_as_their_string_form() -> None:
    class Stamp:  # e.g. a Neo4j temporal value read back from a relationship
        def __str__(self) -> str:
            return "2026-11-24T09:00:00Z"

    edge = EdgeRecord("CALLS", "service:a", "service:b", "x#L1",
                      props={"seen": "2026-11-24T09:00:00Z"})
    assert diff(edge, stored(edge, props={"seen": Stamp()})).empty
