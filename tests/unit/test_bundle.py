from __future__ import annotations

import json
import random

import pytest

from substrate.retrieval.bundle import (
    ConflictMarker,
    ConflictValue,
    EvidenceBundle,
    Hop,
    SeedRef,
    path_confidences,
    sorted_hops,
    weakest_path,
)

SEEDS = (SeedRef("order:ord_881", "Order", "ord_881", 0.93),)
HOPS = (
    Hop(1, "order:ord_881", "order_belongs_to_customer", "customer:cus_77",
        "oms:db:orders/881#row_v3", 0.99, connector="oms"),
    Hop(2, "customer:cus_77", "customer_has_segment", "vip",
        "crm:exports/segments_2026_05_01.parquet#offset_4112", 0.96, connector="crm",
        as_of="2026-05-01"),
)
CONFLICT = ConflictMarker("service:checkout", "PRIMARY_OWNER", (
    ConflictValue("team:platform", ("catalog#c",), 0.7),
    ConflictValue("team:payments", ("slack:C1/2", "CODEOWNERS#L3"), 0.9),
))


def bundle(**kw: object) -> EvidenceBundle:
    args: dict[str, object] = {"snapshot_version": 42, "ontology_version": "2026.11.1",
                               "seeds": SEEDS, "hops": HOPS}
    args.update(kw)
    return EvidenceBundle(**args)  # type: ignore[arg-type]


def test_spec_example_shape_and_keys_always_present() -> None:
    d = bundle().to_dict()
    assert list(d) == ["snapshot_version", "ontology_version", "seed", "hops", "conflicts",
                       "truncated", "confidence"]
    assert d["seed"] == [{"ceid": "order:ord_881", "entity_type": "Order", "name": "ord_881",
                          "score": 0.93}]
    assert d["hops"][0] == {"hop": 1, "edge": "order_belongs_to_customer",
                            "source": "order:ord_881", "target": "customer:cus_77",
                            "evidence_ref": "oms:db:orders/881#row_v3", "confidence": 0.99,
                            "connector": "oms", "as_of": None}
    assert d["conflicts"] == [] and d["truncated"] is False


def test_aggregate_confidence_is_the_weakest_path() -> None:
    assert bundle().aggregate_confidence == pytest.approx(0.99 * 0.96)
    extra = Hop(1, "order:ord_881", "order_has_invoice", "invoice:1", "billing:inv/1", 0.8)
    assert bundle(hops=(*HOPS, extra)).aggregate_confidence == pytest.approx(0.8)
    assert bundle(hops=()).aggregate_confidence is None
    assert bundle(hops=()).to_dict()["confidence"] is None


def test_path_confidence_takes_the_best_way_in() -> None:
    hops = (
        Hop(1, "s", "A", "m", "e1", 0.5),
        Hop(1, "s", "B", "m", "e2", 0.9),
        Hop(2, "m", "C", "t", "e3", 0.5),
        Hop(2, "orphan", "D", "u", "e4", 0.7),  # start reached by nothing: counts from itself
    )
    paths = path_confidences((SeedRef("s", "Service"),), hops)
    assert paths[hops[2]] == pytest.approx(0.45)
    assert paths[hops[3]] == pytest.approx(0.7)


def test_the_weakest_path_is_the_smallest_path_confidence_on_random_graphs() -> None:
    """weakest_path's one pass over sorted hops agrees with path_confidences, duplicates,
    several levels, orphans and several ways in included."""
    rng = random.Random(11)
    nodes = [f"n{i}" for i in range(8)]
    for _ in range(300):
        seeds = tuple(SeedRef(c, "Service") for c in rng.sample(nodes, rng.randint(0, 2)))
        hops = tuple(Hop(rng.randint(1, 3), rng.choice(nodes), rng.choice("AB"),
                         rng.choice(nodes), f"e{rng.randint(0, 3)}",
                         rng.choice((0.2, 0.5, 0.9, 1.0)))
                     for _ in range(rng.randint(0, 10)))
        hops += hops[: rng.randint(0, 2)]  # exact duplicates
        paths = path_confidences(seeds, hops)
        expected = round(min(paths.values()), 6) if paths else None
        assert weakest_path(seeds, sorted_hops(set(hops))) == expected
        assert EvidenceBundle(1, "o", seeds, hops).to_dict()["confidence"] == expected


def test_same_inputs_in_any_order_give_byte_identical_json() -> None:
    hops = [*HOPS, Hop(1, "order:ord_881", "order_has_invoice", "invoice:1", "billing:inv/1", 0.8)]
    seeds = [*SEEDS, SeedRef("customer:cus_77", "Customer")]
    reference = bundle(hops=tuple(hops), seeds=tuple(seeds), conflicts=(CONFLICT,),
                       truncated=True).to_json()
    rng = random.Random(7)
    for _ in range(10):
        rng.shuffle(hops)
        rng.shuffle(seeds)
        values = list(CONFLICT.values)
        rng.shuffle(values)
        shuffled = ConflictMarker(CONFLICT.subject, CONFLICT.predicate, tuple(values))
        again = bundle(hops=tuple(hops + hops[:1]), seeds=tuple(seeds), conflicts=(shuffled,),
                       truncated=True)
        assert again.to_json() == reference
        assert again.content_hash() == bundle(hops=tuple(hops), seeds=tuple(seeds),
                                              conflicts=(CONFLICT,),
                                              truncated=True).content_hash()


def test_json_is_canonical() -> None:
    text = bundle(conflicts=(CONFLICT,)).to_json()
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"),
                              ensure_ascii=False)
    conflict = json.loads(text)["conflicts"][0]
    assert conflict["conflict"] is True
    assert [v["value"] for v in conflict["values"]] == ["team:payments", "team:platform"]
    assert conflict["values"][0]["evidence_refs"] == ["CODEOWNERS#L3", "slack:C1/2"]


def test_unicode_is_kept_and_nan_refused() -> None:
    seeds = (SeedRef("service:zahlung", "Service", "Zahlungsdienst Ü", float("nan")),)
    with pytest.raises(ValueError):
        bundle(seeds=seeds).to_json()
    ok = bundle(seeds=(SeedRef("service:zahlung", "Service", "Zahlungsdienst Ü"),)).to_json()
    assert "Zahlungsdienst Ü" in ok


@pytest.mark.parametrize(
    "kwargs",
    [{"evidence_ref": ""}, {"confidence": 1.2}, {"confidence": -0.1}, {"hop": 0}],
)
def test_hop_invariants(kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {"hop": 1, "source": "a", "edge": "CALLS", "target": "b",
                               "evidence_ref": "x#1", "confidence": 0.5}
    args.update(kwargs)
    with pytest.raises(ValueError):
        Hop(**args)  # type: ignore[arg-type]
