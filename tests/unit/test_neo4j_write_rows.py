"""Rows of the write path's statements: edges grouped by start node, user properties only
when present (readers take a missing ``prop_keys`` as empty)."""

from __future__ import annotations

import pytest

from substrate.graph.diff import edge_key
from substrate.graph.neo4j_write import edge_row, edge_rows
from substrate.graph.records import EdgeRecord

ENDS = {"service:a": "4:db:1", "service:b": "4:db:2"}


def test_edge_rows_group_keys_by_type_label_and_start_node() -> None:
    edges = [EdgeRecord("CALLS", "service:a", "service:b", "x", source="s"),
             EdgeRecord("CALLS", "service:a", "service:c", "x", source="s"),
             EdgeRecord("DEPENDS_ON", "service:a", "infra:db", "x", source="s"),
             EdgeRecord("MENTIONS", "chunk:d#1", "service:a", "x", source="s")]
    rows = edge_rows((edge_key(e), e.src) for e in edges)
    assert rows == {
        ("CALLS", "Entity"): [{"src": "service:a", "keys": [edge_key(edges[0]),
                                                            edge_key(edges[1])]}],
        ("DEPENDS_ON", "Entity"): [{"src": "service:a", "keys": [edge_key(edges[2])]}],
        ("MENTIONS", "Chunk"): [{"src": "chunk:d#1", "keys": [edge_key(edges[3])]}],
    }
    assert edge_rows([]) == {}


def test_edge_row_carries_prop_keys_only_with_user_properties() -> None:
    plain = EdgeRecord("CALLS", "service:a", "service:b", "deploy.yaml#L3", source="s")
    row = edge_row(edge_key(plain), plain, ENDS)
    assert "user" not in row and "prop_keys" not in row
    assert row["evidence_ref"] == "deploy.yaml#L3"
    rich = EdgeRecord("CALLS", "service:a", "service:b", "r", source="s",
                      props={"protocol": "grpc", "eid": "reserved"})
    row = edge_row(edge_key(rich), rich, ENDS)
    assert row["user"] == {"protocol": "grpc"} and row["prop_keys"] == ["protocol"]


def test_edge_row_names_its_ends_by_element_id() -> None:
    edge = EdgeRecord("CALLS", "service:a", "service:b", "deploy.yaml#L3", source="s")
    row = edge_row(edge_key(edge), edge, ENDS)
    assert (row["a"], row["b"]) == ("4:db:1", "4:db:2")
    assert "src" not in row and "dst" not in row


def test_an_edge_without_a_known_end_is_refused_before_the_write() -> None:
    edge = EdgeRecord("CALLS", "service:a", "service:zz", "deploy.yaml#L3", source="s")
    with pytest.raises(RuntimeError, match=r"no node read or created for \['service:zz'\]"):
        edge_row(edge_key(edge), edge, ENDS)
