"""The plan keeper's memory of the gateway's reads (issue 12): one entry per query text and
parameter shape as Neo4j's plan cache tells them apart, the most recent kept."""

from __future__ import annotations

from typing import cast

from neo4j import AsyncDriver

from substrate.retrieval.plan_keeper import PlanKeeper, no_tenant, shape

READ = {"tenant": "acme", "v": 7, "clearance": ["public", "internal"], "ceid": "service:cart",
        "name": "cart", "jurisdictions": None}


def keeper(recent: int = 64) -> PlanKeeper:
    return PlanKeeper(cast(AsyncDriver, None), 0, recent)


def test_the_shape_is_the_types_and_the_size_classes_of_strings_and_lists() -> None:
    assert shape(READ) == shape({**READ, "tenant": "bank", "ceid": "service:carts", "v": 9})
    assert shape(READ) != shape({**READ, "v": "7"})  # another type
    assert shape(READ) != shape({**READ, "name": "shopping-cart"})  # 4 -> 13 characters
    assert shape(READ) != shape({**READ, "clearance": ["public"]})  # 2 -> 1 item
    sizes = [shape({"s": "x" * n})[0][2] for n in (0, 1, 2, 10, 11, 100, 101, 1000, 1001)]
    assert sizes == [-1, 0, 1, 1, 2, 2, 3, 3, 4]


def test_reads_are_kept_per_text_and_shape_the_latest_parameters_won() -> None:
    k = keeper()
    k.seen("Q1", READ)
    k.seen("Q1", {**READ, "ceid": "service:carx"})  # same shape: the latest values kept
    k.seen("Q1", {**READ, "name": "shopping-cart"})  # another shape: kept beside it
    k.seen("Q2", READ)
    assert [(q, p["ceid"], p["name"]) for q, p in k.remembered()] == [
        ("Q1", "service:carx", "cart"), ("Q1", "service:cart", "shopping-cart"),
        ("Q2", "service:cart", "cart")]


def test_the_oldest_read_goes_first_and_a_repeated_one_is_recent_again() -> None:
    k = keeper(recent=2)
    k.seen("Q1", READ)
    k.seen("Q2", READ)
    k.seen("Q1", READ)  # Q1 is the most recent now
    k.seen("Q3", READ)  # Q2, the oldest, goes
    assert [q for q, _ in k.remembered()] == ["Q1", "Q3"]


def test_no_tenant_has_the_size_of_the_tenant_it_stands_for() -> None:
    fake = no_tenant("t-scale-l-ab3ca7")
    assert len(fake) == 16 and set(fake) == {"\0"}
    assert shape({**READ, "tenant": no_tenant("acme")}) == shape(READ)
    assert no_tenant(None) == "\0"


def test_a_keeper_with_no_interval_never_starts() -> None:
    k = keeper()
    k.start()  # no running loop needed: nothing is scheduled
    assert k.stats.refreshes == 0


