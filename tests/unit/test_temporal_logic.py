"""Pure logic of time, intent and impact: diff collapsing, incident windows, ids, paths."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from substrate.errors import BadRequest
from substrate.graph.ontology import load_ontology
from substrate.retrieval import temporal_diff as td
from substrate.retrieval.impact import path_nodes
from substrate.retrieval.incidents import _span, describe, incident_time, window_length
from substrate.retrieval.intent import pr_ceid
from substrate.retrieval.rerank import cosine, cosines
from substrate.retrieval.temporal import (
    GraphFilter,
    Page,
    decode_cursor,
    encode_cursor,
    page_start,
    state_page,
)
from substrate.retrieval.timephrases import TimeScope

ONTOLOGY = load_ontology()
SNAPS = [
    {"version": 10, "valid_at": datetime(2026, 1, 1, tzinfo=UTC), "source": "git:x",
     "note": "a" * 40 + " first (#1)"},
    {"version": 12, "valid_at": datetime(2026, 1, 2, tzinfo=UTC), "source": "org",
     "note": None},
]


def node(op1: str | None, op2: str | None, before: dict[str, Any] | None,
         after: dict[str, Any] | None, versions: tuple[int, ...] = (10,),
         source_change: bool = False, last_source: str = "git:x") -> td.ElementHistory:
    return td.ElementHistory("node", "service:a", op1, op2, before, after, last_source,
                             versions, source_change)


def edge(op1: str, op2: str, before: dict[str, Any] | None,
         after: dict[str, Any] | None) -> td.ElementHistory:
    return td.ElementHistory("edge", "service:a-[CALLS]->service:b@git:x", op1, op2, before,
                             after, "git:x", (10, 12), False)


def payload(ref: str = "f#L1@abc1234", **props: Any) -> dict[str, Any]:
    return {"type": "CALLS", "src": "service:a", "dst": "service:b", "source": "git:x",
            "evidence_ref": ref, "confidence": 0.95, "weight": 1.0, "props": props}


def after(**props: Any) -> dict[str, Any]:
    return {"label": "Service", "props": {"name": "a", **props}, "provenance": ["r#L1@abc1234"]}


RAW = {"ceid": "service:a", "tenant_id": "t", "name": "a", "env": ["X=1"], "iv_from": [1],
       "iv_to": [9], "sources": ["git:x"], "provenance": ["r#L1@0000000"]}


def only(rows: list[td.ElementHistory]) -> dict[str, Any]:
    (entry,) = td.collapse(rows, SNAPS, ONTOLOGY)
    return entry


def test_node_added_removed_changed() -> None:
    added = only([node("add", "add", None, after(env=["X=1"]))])
    assert added["change"] == "added" and added["after"] == {"name": "a", "env": ["X=1"]}
    assert added["evidence"] == ["r#L1@abc1234"] and added["label"] == "Service"
    removed = only([node("close", "close", RAW, None)])
    assert removed["change"] == "removed" and removed["before"] == {"name": "a", "env": ["X=1"]}
    assert removed["evidence"] == ["r#L1@0000000"]  # what had proved it
    changed = only([node("update", "update", RAW, after(env=["X=2"]), (10, 12))])
    assert changed["change"] == "changed"
    assert changed["changed_keys"] == {"env": {"before": ["X=1"], "after": ["X=2"]}}
    assert changed["snapshot"]["version"] == 12 and changed["versions"] == [10, 12]


def test_reverted_and_transient_changes() -> None:
    # same properties, another provenance: an evidence-only change, not a fact change
    assert only([node("update", "update", RAW, after(env=["X=1"]))])["change"] == "evidence"
    assert only([node("add", "close", None, None)])["change"] == "transient"
    source_only = only([node(None, None, None, None, source_change=True)])
    assert source_only["change"] == "changed" and "sources" in source_only["changed_keys"]
    new_source = only([node("update", "update", RAW, after(env=["X=1"]), last_source="org")])
    assert new_source["change"] == "changed" and "sources" in new_source["changed_keys"]


def test_edges() -> None:
    e = only([edge("add", "add", None, payload(via="env"))])
    assert e["change"] == "added" and (e["from"], e["to"], e["type"]) == (
        "service:a", "service:b", "CALLS")
    assert e["evidence"] == ["f#L1@abc1234"] and e["hop"]["evidence_ref"] == "f#L1@abc1234"
    moved = only([edge("update", "update", payload("f#L1@abc1234"), payload("f#L2@def5678"))])
    assert moved["change"] == "evidence" and set(moved["changed_keys"]) == {"evidence_ref"}
    reordered = only([edge("update", "update", payload(evidence_refs=["a#L1@1", "b#L2@2"]),
                           payload(evidence_refs=["b#L2@2", "a#L1@1"]))])
    assert reordered["change"] == "evidence" and set(reordered["changed_keys"]) == {
        "evidence_refs"}
    fact = only([edge("update", "update", payload(via="env"), payload("f#L2@def5678",
                                                                       via="depends_on"))])
    assert fact["change"] == "changed" and set(fact["changed_keys"]) == {"evidence_ref", "props"}
    gone = only([edge("close", "close", payload(), None)])
    assert gone["change"] == "removed" and gone["evidence"] == ["f#L1@abc1234"]
    transient = only([edge("add", "close", None, None)])
    assert transient["change"] == "transient" and transient["hop"] is None
    assert (transient["type"], transient["from"], transient["connector"]) == (
        "CALLS", "service:a", "git:x")  # from the element key: no payload survived
    several = only([edge("add", "add", None, payload(evidence_refs=["f#L1@abc1234", "g#L3@1"]))])
    assert several["evidence"] == ["f#L1@abc1234", "g#L3@1"]


def test_snapshot_refs_order_and_filters() -> None:
    ref = td.snapshot_ref(SNAPS[0])
    assert ref["commit"] == "a" * 40 and ref["valid_at"] == "2026-01-01T00:00:00+00:00"
    assert td.snapshot_ref(SNAPS[1])["commit"] is None
    entries = td.collapse([edge("add", "add", None, payload()),
                           node("add", "add", None, after())], SNAPS, ONTOLOGY)
    assert [e["kind"] for e in entries] == ["node", "edge"]
    assert td.matches(entries[1], None, ("CALLS",), ONTOLOGY)
    assert not td.matches(entries[0], None, ("CALLS",), ONTOLOGY)
    assert td.matches(entries[0], "Service", (), ONTOLOGY)
    assert td.matches(entries[1], "Service", (), ONTOLOGY)
    assert not td.matches(entries[1], "Team", (), ONTOLOGY)
    assert td.distance_of(entries[1], {"service:b": 2, "service:a": 1}) == 1
    assert td.distance_of(entries[1], {}) is None


def test_incident_windows_and_times() -> None:
    assert window_length("what changed before the outage?") == timedelta(days=3)
    assert window_length("what changed in the 7 days before it") == timedelta(days=7)
    assert window_length("two weeks prior to the incident") == timedelta(weeks=2)
    assert window_length("36 hours leading up to the crash") == timedelta(hours=36)
    assert window_length("what changed in the week before the incident") == timedelta(weeks=1)
    assert window_length("the day before the outage") == timedelta(days=1)
    assert window_length("in the fortnight before it") == timedelta(weeks=2)
    assert incident_time("2026-09-17T14:32:00Z") == (datetime(2026, 9, 17, 14, 32, tzinfo=UTC),
                                                     False)
    assert incident_time("2026-09-17") == (datetime(2026, 9, 18, tzinfo=UTC), True)
    assert incident_time("last week") is None and incident_time(None) is None
    day = datetime(2026, 9, 18, tzinfo=UTC)
    assert _span(TimeScope(end=day)) == (day - timedelta(days=1), day)
    assert _span(TimeScope(as_of=day)) == (day - timedelta(days=1), day)
    assert _span(TimeScope()) == (None, None)


def test_describe_env_deltas() -> None:
    entry = {"kind": "node", "label": "Service", "id": "service:a", "change": "changed",
             "changed_keys": {"env": {"before": ["A=1", "B=2"], "after": ["A=5", "C=3"]},
                              "image": {"before": "x:1", "after": "x:2"}}}
    assert describe(entry) == "Service service:a changed (env: A 1→5, +C, -B; image)"
    e = {"kind": "edge", "type": "CALLS", "from": "a", "to": "b", "change": "added",
         "evidence": ["f#L1@abc1234"]}
    assert describe(e) == "CALLS a -> b added [f#L1@abc1234]"


@pytest.mark.parametrize("value", [447, "447", "pr:447", "#447", "PR #447", " pr #447 "])
def test_pr_ids(value: Any) -> None:
    assert pr_ceid(value) == "pr:447"


@pytest.mark.parametrize("value", [True, None, "", "abc", "pr:", 4.5, "pr:1x", [447]])
def test_bad_pr_ids(value: Any) -> None:
    with pytest.raises(BadRequest):
        pr_ceid(value)


def test_cosine() -> None:
    assert cosine([1.0, 0.0], [1.0, 0.0]) == 1.0
    assert cosine([1.0, 0.0], [0.0, 2.0]) == 0.0
    assert cosine([0.0, 0.0], [1.0, 1.0]) == 0.0
    assert round(cosine([1.0, 1.0], [-1.0, -1.0]), 6) == -1.0
    with pytest.raises(ValueError):
        cosine([1.0, 0.0], [1.0, 0.0, 0.0])


def test_cosines_equal_each_pair_and_keep_zero_vectors_at_zero() -> None:
    query = [0.3, -1.2, 2.5]
    vectors = [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.6, -2.4, 5.0], [-0.3, 1.2, -2.5]]
    got = cosines(query, vectors)
    dots = [sum(a * b for a, b in zip(query, v, strict=True)) for v in vectors]
    norms = [(sum(a * a for a in query) * sum(b * b for b in v)) ** 0.5 for v in vectors]
    want = [d / n if n else 0.0 for d, n in zip(dots, norms, strict=True)]
    assert [round(x, 12) for x in got] == [round(x, 12) for x in want]
    assert cosines(query, []) == []
    with pytest.raises(ValueError):
        cosines(query, [[1.0, 2.0]])


def test_path_nodes_follow_edges_in_either_direction() -> None:
    hops = [{"from": "item:1", "to": "intent:x"}, {"from": "intent:x", "to": "service:s"},
            {"from": "service:t", "to": "service:s"}]
    assert path_nodes("item:1", hops) == ["item:1", "intent:x", "service:s", "service:t"]
    child = [{"from": "item:2", "to": "item:1"}, {"from": "item:2", "to": "intent:y"}]
    assert path_nodes("item:1", child) == ["item:1", "item:2", "intent:y"]


def test_cursor_page_and_filter_validation() -> None:
    pos = {"p": "n", "k": "service:a"}
    assert decode_cursor(encode_cursor(pos)) == pos
    for bad in ("***", "bm90IGpzb24", encode_cursor({"x": 1})[:3]):
        with pytest.raises(BadRequest):
            decode_cursor(bad)
    with pytest.raises(BadRequest):
        Page(limit=0).validate()
    with pytest.raises(BadRequest):
        Page(cursor="x", offset=1).validate()
    with pytest.raises(BadRequest):
        GraphFilter(label="Nope").validate(ONTOLOGY)
    with pytest.raises(BadRequest):
        GraphFilter(types=("CALLS", "FOLLOWS")).validate(ONTOLOGY)
    with pytest.raises(BadRequest):
        GraphFilter(depth=4).validate(ONTOLOGY)
    ctx = GraphFilter(service="x", types=("CALLS",)).validate(ONTOLOGY).context()
    assert ctx == {"label": "Entity", "service": True, "depth": 1, "types": ["CALLS"]}


def test_where_a_state_page_starts() -> None:
    assert page_start(Page()) == {"nodes_after": "", "rels_after": "", "offset": 0}
    assert page_start(Page(offset=7)) == {"nodes_after": "", "rels_after": "", "offset": 7}
    assert page_start(Page(cursor=encode_cursor({"p": "n", "k": "service:b"}))) == {
        "nodes_after": "service:b", "rels_after": "", "offset": 0}
    assert page_start(Page(cursor=encode_cursor({"p": "r", "k": "e9"}))) == {
        "nodes_after": None, "rels_after": "e9", "offset": 0}
    for bad in (encode_cursor({"p": "x", "k": ""}), encode_cursor({"p": "n", "k": 3})):
        with pytest.raises(BadRequest):
            page_start(Page(cursor=bad))


def _node(c: str) -> dict[str, Any]:
    return {"ceid": c}


def _rel(e: str) -> dict[str, Any]:
    return {"eid": e}


def test_a_state_page_and_its_cursor() -> None:
    """Nodes first, then relationships; the cursor names the last item given."""
    full = state_page({"nodes": [_node("a"), _node("b"), _node("c")], "rels": [],
                   "rel_total": 5}, 2)
    assert [n["ceid"] for n in full["nodes"]] == ["a", "b"] and full["relationships"] == []
    assert decode_cursor(full["next_cursor"]) == {"p": "n", "k": "b"}
    exact = state_page({"nodes": [_node("a"), _node("b")], "rels": [_rel("e1")],
                    "rel_total": 1}, 2)
    assert exact["relationships"] == []  # the page is full: the relationships come next
    assert decode_cursor(exact["next_cursor"]) == {"p": "r", "k": ""}
    last = state_page({"nodes": [_node("a"), _node("b")], "rels": [], "rel_total": 0}, 2)
    assert last["next_cursor"] is None
    mixed = state_page({"nodes": [_node("a")], "rels": [_rel("e1"), _rel("e2"), _rel("e3")],
                    "rel_total": 3}, 3)
    assert [r["eid"] for r in mixed["relationships"]] == ["e1", "e2"]
    assert decode_cursor(mixed["next_cursor"]) == {"p": "r", "k": "e2"}
    rest = state_page({"nodes": [], "rels": [_rel("e3")], "rel_total": 3}, 3)
    assert [r["eid"] for r in rest["relationships"]] == ["e3"] and rest["next_cursor"] is None
