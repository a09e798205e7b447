"""Modularity and NMI (gds_jobs.quality) against values worked out by hand, and the pure
parts of the community jobs: Leiden levels, node state, the RAPTOR walk, the job lock key."""

from __future__ import annotations

import math

import pytest

from gds_jobs.communities import community_id, node_state, partitions
from gds_jobs.guard import NotEnoughMemory, Progress, check_memory, lock_key
from gds_jobs.incremental import node_ids
from gds_jobs.quality import modularity, nmi
from substrate.retrieval.raptor import walk, with_dependencies
from substrate.retrieval.relevance import keyword_overlap, terms


def test_nmi_of_equal_partitions_is_one_whatever_the_labels() -> None:
    truth = {"a": 0, "b": 0, "c": 1, "d": 1}
    assert nmi(truth, {"a": "x", "b": "x", "c": "y", "d": "y"}) == pytest.approx(1.0)


def test_nmi_of_independent_partitions_is_zero() -> None:
    truth = {"a": 0, "b": 0, "c": 1, "d": 1}
    assert nmi(truth, {"a": 0, "b": 1, "c": 0, "d": 1}) == pytest.approx(0.0, abs=1e-12)


def test_nmi_by_hand() -> None:
    # U = {ab}{cd}; V = {abc}{d}: H(U) = ln 2, H(V) = -(3/4 ln 3/4 + 1/4 ln 1/4),
    # I = H(U) + H(V) - H(U, V) with H(U, V) = -(2 * 1/4 ln 1/4 + ... ) over cells 2,1,1
    truth = {"a": 0, "b": 0, "c": 1, "d": 1}
    found = {"a": 0, "b": 0, "c": 0, "d": 1}
    hu = math.log(2)
    hv = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    huv = -(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25))
    assert nmi(truth, found) == pytest.approx((hu + hv - huv) / ((hu + hv) / 2))


def test_modularity_of_two_triangles_joined_by_one_edge() -> None:
    edges = [("a", "b", 1.0), ("b", "c", 1.0), ("a", "c", 1.0),
             ("d", "e", 1.0), ("e", "f", 1.0), ("d", "f", 1.0), ("c", "d", 1.0)]
    split = {"a": 1, "b": 1, "c": 1, "d": 2, "e": 2, "f": 2}
    # m = 7; each side: 3 inside edges, degree sum 7 -> 2 * (3/7 - (7/14)^2)
    assert modularity(edges, split) == pytest.approx(2 * (3 / 7 - 0.25))
    assert modularity(edges, dict.fromkeys(split, 0)) == pytest.approx(0.0)
    assert modularity(edges, split) > modularity(edges, {})


def test_partitions_keep_the_final_level_and_the_finer_groups_only() -> None:
    # finest: {a,b} {c,d} {e,f}; final: {a,b,c,d} {e,f}
    found = partitions({"a": [0, 0], "b": [0, 0], "c": [1, 0], "d": [1, 0],
                        "e": [2, 2], "f": [2, 2], "g": [3, 3]})
    assert [(c.level, c.members) for c in found] == [
        (1, ("a", "b", "c", "d")), (1, ("e", "f")), (2, ("a", "b")), (2, ("c", "d"))]
    state = node_state(found)
    domain = community_id(1, ("a", "b", "c", "d"))
    assert state["a"] == (domain, community_id(2, ("a", "b")))
    assert state["e"] == (community_id(1, ("e", "f")),) * 2  # a domain is its own module
    assert "g" not in state  # singletons take no part


def test_node_ids_leave_out_edge_ids() -> None:
    assert node_ids(["service:a", "service:a-[CALLS]->service:b@git", "infra:db"]) == [
        "infra:db", "service:a"]


def test_lock_keys_are_signed_32_bit_and_differ_per_job_and_tenant() -> None:
    keys = {lock_key(j, t) for j in ("communities", "risks") for t in ("acme", "beta")}
    assert len(keys) == 4
    assert all(-2**31 <= k < 2**31 for pair in keys for k in pair)


def test_memory_check_refuses_what_does_not_fit() -> None:
    progress = Progress("test", quiet=True)
    assert check_memory(100, 1000, "leiden", progress) == 100
    with pytest.raises(NotEnoughMemory) as err:
        check_memory(900, 1000, "leiden", progress)
    assert err.value.to_dict()["error"]["detail"] == {
        "algorithm": "leiden", "bytes_max": 900, "heap_free": 1000}
    assert [s["step"] for s in progress.steps] == ["memory estimate", "memory estimate"]


def _node(node_id: str, level: int, parent: str | None, title: str,
          vector: list[float]) -> dict[str, object]:
    return {"node_id": node_id, "level": level, "parent_id": parent, "title": title,
            "summary": title, "members": [{"ceid": node_id[2:], "name": title,
                                           "label": "Service"}], "embedding": vector}


def test_the_walk_expands_only_the_relevant_branch_and_reports_its_path() -> None:
    rows = [_node("S", 0, None, "system", [1, 1, 0]),
            _node("D:pay", 1, "S", "payments domain", [1, 0, 0]),
            _node("D:web", 1, "S", "web domain", [0, 1, 0]),
            _node("M:pay", 2, "D:pay", "card module", [1, 0, 0]),
            _node("M:web", 2, "D:web", "pages module", [0, 1, 0]),
            _node("N:service:payment", 3, "M:pay", "payment", [1, 0.1, 0]),
            _node("N:service:pages", 3, "M:web", "pages", [0, 1, 0])]
    leaves, path = walk(rows, [1, 0, 0], "card payments")
    assert [s.row["node_id"] for s in leaves] == ["N:service:payment"]
    expanded = [(p["level"], p["node_id"]) for p in path if p["expanded"]]
    assert expanded == [(0, "S"), (1, "D:pay"), (2, "M:pay"), (3, "N:service:payment")]
    assert {p["node_id"] for p in path if not p["expanded"]} == {"D:web"}


def test_keyword_overlap_counts_content_words_and_plurals() -> None:
    assert terms("What are the datastores of payments?") == {"datastores", "payments"}
    assert keyword_overlap({"payments", "datastores"}, "the payment datastore") == 1.0


def test_the_best_leaves_bring_their_dependencies_once() -> None:
    rows = [_node("S", 0, None, "system", [1, 0, 0]),
            _node("D:a", 1, "S", "a", [1, 0, 0]), _node("M:a", 2, "D:a", "a", [1, 0, 0]),
            _node("N:service:fraud", 3, "M:a", "fraud", [1, 0, 0]),
            _node("N:infra:redis", 3, "M:b", "redis", [0, 1, 0])]
    rows[3]["members"] = [{"ceid": "service:fraud", "name": "fraud", "label": "Service",
                           "depends_on": ["infra:redis", "service:user"]}]
    leaves, _ = walk(rows, [1, 0, 0], "fraud cache")
    ranked, hops = with_dependencies(rows, leaves)
    assert [s.row["node_id"] for s in ranked] == [
        "N:service:fraud", "N:infra:redis", "N:service:user"]
    assert ranked[1].score == pytest.approx(0.9 * ranked[0].score)
    assert [(h["node_id"], h["via"]) for h in hops] == [
        ("N:infra:redis", "N:service:fraud"), ("N:service:user", "N:service:fraud")]
