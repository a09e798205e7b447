"""TenantMemory: what a write session knows from its own commits (pure logic)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from substrate.graph import diff as d
from substrate.graph import session_memory
from substrate.graph.records import EdgeRecord, NodeRecord
from substrate.graph.session_memory import SessionMemory, TenantMemory


def node(ceid: str) -> NodeRecord:
    return NodeRecord(ceid, "Service", {"name": ceid})


def edge(a: str, b: str) -> tuple[str, EdgeRecord]:
    e = EdgeRecord("CALLS", a, b, "x#L1", source="s")
    return d.edge_key(e), e


def changes(adds: Sequence[str] = (), closes: Sequence[str] = (),
            edges: Sequence[tuple[str, EdgeRecord]] = ()) -> d.ChangeSet:
    out = d.ChangeSet()
    out.node_adds = [node(c) for c in adds]
    out.node_closes = [(c, {}) for c in closes]
    out.edge_adds = list(edges)
    return out


def test_created_nodes_are_live_and_their_unmade_edges_known_absent() -> None:
    memory = TenantMemory()
    memory.remember({}, set(), {"service:a": "4:x:1", "service:b": "4:x:2"},
                    changes(adds=["service:a", "service:b"]))
    assert memory.live == {"service:a": "4:x:1", "service:b": "4:x:2"}
    key, _ = edge("service:a", "service:b")
    assert memory.known_absent(key, "service:a", "service:b")
    assert memory.known_absent("k", "service:old", "service:a")  # one end born is enough
    assert not memory.known_absent("k", "service:old", "service:older")  # may predate us
    made = edge("service:a", "service:b")
    memory.remember({"service:a": "4:x:1", "service:b": "4:x:2"},
                    {"service:a", "service:b"}, {}, changes(edges=[made]))
    assert not memory.known_absent(made[0], "service:a", "service:b")  # read it


def test_found_and_written_nodes_are_remembered_and_closed_ones_forgotten() -> None:
    memory = TenantMemory()
    existing = {"service:live": "4:x:1", "service:closed": "4:x:2", "service:end": "4:x:3"}
    # service:closed existed closed and the commit wrote it again (MERGE): live now
    memory.remember(existing, {"service:live", "service:end"}, {},
                    changes(adds=["service:closed"]))
    assert memory.live == existing
    assert memory.born == set()  # none of them was created by the session
    memory.remember(existing, set(existing), {}, changes(closes=["service:end"]))
    assert "service:end" not in memory.live
    assert not memory.known_absent("k", "service:live", "service:closed")


def test_the_limits_empty_born_and_made_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_memory, "MAX_MADE", 3)
    monkeypatch.setattr(session_memory, "MAX_LIVE", 3)
    memory = TenantMemory()
    memory.remember({}, set(), {"service:a": "1", "service:b": "2"},
                    changes(edges=[edge("service:a", "service:b")]))
    assert memory.born and memory.made
    memory.remember({}, set(), {"service:c": "3", "service:d": "4"},
                    changes(edges=[edge("service:c", "service:d")]))
    # full: what was known is dropped (a node born before is no longer trusted), what this
    # commit created is kept
    assert memory.born == {"service:c", "service:d"}
    assert memory.made == {hash(edge("service:c", "service:d")[0])}
    assert set(memory.live) == {"service:c", "service:d"}
    assert not memory.known_absent("k", "service:a", "service:x")


def test_a_memory_begun_on_an_empty_tenant_knows_it_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    memory = TenantMemory(complete=True)
    assert memory.known_absent_node("service:a")
    memory.remember({}, set(), {"service:a": "1"}, changes(adds=["service:a"]))
    assert not memory.known_absent_node("service:a")  # it exists: read its properties
    assert memory.known_absent("k", "service:x", "service:y")  # no end born, still absent
    assert not TenantMemory().known_absent_node("service:a")  # not known whole: read
    monkeypatch.setattr(session_memory, "MAX_MADE", 1)
    memory.remember({}, set(), {"service:b": "2", "service:c": "3"}, changes())
    assert not memory.complete  # what it created before is forgotten: no longer whole
    assert not memory.known_absent_node("service:a")


def test_begin_asks_whether_the_tenant_is_empty_once_per_new_memory() -> None:
    asked: list[str] = []

    def empty(answer: bool, name: str) -> bool:
        asked.append(name)
        return answer

    memory = SessionMemory()
    first = memory.begin("t1", lambda: empty(True, "t1"))
    assert first.complete and memory.tenants["t1"] is first
    assert memory.begin("t1", lambda: empty(False, "t1")) is first  # known: not asked again
    assert not memory.begin("t2", lambda: empty(False, "t2")).complete
    memory.forget("t1")
    assert not memory.begin("t1", lambda: empty(False, "t1")).complete  # asked anew
    assert asked == ["t1", "t2", "t1"]
