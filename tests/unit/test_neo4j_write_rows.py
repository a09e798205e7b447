"""Rows of the write path's statements: edges grouped by start node, user properties only
when present (readers take a missing ``prop_keys`` as empty); built before the transaction,
with only the ends it creates filled in during it."""

from __future__ import annotations

import io

import pytest
from neo4j._codec.packstream.v1 import Packer

from substrate.graph.diff import ChangeSet, edge_key
from substrate.graph.neo4j_write import BoltRows, edge_row, edge_rows, rows_for
from substrate.graph.records import EdgeRecord, NodeRecord

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


def _changes(nodes: list[NodeRecord], edges: list[EdgeRecord]) -> ChangeSet:
    changes = ChangeSet()
    changes.node_adds += nodes
    changes.edge_adds += [(edge_key(e), e) for e in edges]
    return changes


def test_rows_built_before_the_transaction_leave_only_created_ends_open() -> None:
    new = NodeRecord("service:c", "Service", {"name": "c"})
    known = NodeRecord("service:a", "Service", {"name": "a", "tier": "gold"})
    edges = [EdgeRecord("CALLS", "service:a", "service:b", "r1", source="s"),
             EdgeRecord("CALLS", "service:a", "service:c", "r2", source="s"),
             EdgeRecord("CALLS", "service:c", "service:b", "r3", source="s",
                        props={"protocol": "grpc"})]
    rows = rows_for(_changes([new, known], edges), {}, ENDS, "t1", 7, 99, "s")
    assert [r["props"]["ceid"] for r in rows.created["Service"]] == ["service:c"]
    assert rows.created["Service"][0]["props"]["valid_from_v"] == 7
    assert [r["ceid"] for r in rows.merged["Service"]] == ["service:a"]  # it exists: MERGE
    plain, rich = rows.edges[("CALLS", False)], rows.edges[("CALLS", True)]
    assert [(r["a"], r["b"]) for r in plain] == [("4:db:1", "4:db:2"), ("4:db:1", None)]
    assert [(r["a"], r["b"]) for r in rich] == [(None, "4:db:2")]
    rows.fill_ends({"service:c": "4:db:9"})
    assert [(r["a"], r["b"]) for r in plain + rich] == [
        ("4:db:1", "4:db:2"), ("4:db:1", "4:db:9"), ("4:db:9", "4:db:2")]
    rows.fill_ends({"service:c": "4:db:10"})  # the transaction ran again: its own ids
    assert [r["b"] for r in plain] == ["4:db:2", "4:db:10"] and rich[0]["a"] == "4:db:10"


def test_an_open_end_the_transaction_did_not_create_is_refused() -> None:
    edge = EdgeRecord("CALLS", "service:a", "service:zz", "deploy.yaml#L3", source="s")
    rows = rows_for(_changes([], [edge]), {}, ENDS, "t1", 7, 99, "s")
    with pytest.raises(RuntimeError, match=r"no node read or created for \['service:zz'\]"):
        rows.fill_ends({})


def test_statement_rows_pack_as_a_list_and_print_short() -> None:
    """The driver formats every RUN's parameters for its debug log, on or off: the rows'
    ``repr`` is short, and they pack exactly as the plain list they copy."""
    rows = [{"key": f"e{i}", "a": f"4:x:{i}", "confidence": 0.9, "user": {"n": i}}
            for i in range(3)]
    plain, wrapped = io.BytesIO(), io.BytesIO()
    Packer(plain).pack({"rows": rows})
    Packer(wrapped).pack({"rows": BoltRows(rows)})
    assert wrapped.getvalue() == plain.getvalue()
    assert repr({"rows": BoltRows(rows)}) == "{'rows': <3 rows>}"
