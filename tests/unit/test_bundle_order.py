"""The bundle's sort avoids canonical JSON unless two hops (or seeds) tie before it: the
order, the dict and the hash are what a full ``_hop_key`` sort gives, ties included."""

from __future__ import annotations

import random

from substrate.retrieval.bundle import (
    EvidenceBundle,
    Hop,
    SeedRef,
    _canonical_json,
    _hop_key,
    sorted_hops,
)

TIES = [  # same hop/source/edge/target/evidence_ref: only the canonical JSON orders them
    Hop(1, "service:a", "CALLS", "service:b", "x.yaml#L1", 0.9, connector="k8s"),
    Hop(1, "service:a", "CALLS", "service:b", "x.yaml#L1", 0.5, connector="git"),
    Hop(1, "service:a", "CALLS", "service:b", "x.yaml#L1", 0.5, connector="git",
        as_of="2026-01-01"),
]
DISTINCT = [Hop(h, f"service:s{i}", "CALLS", f"service:t{i % 3}", f"f{i}#L{i}", 0.8)
            for i in range(12) for h in (1, 2)]


def test_sorted_hops_is_the_full_key_order_with_and_without_ties() -> None:
    rng = random.Random(7)
    for hops in (DISTINCT, DISTINCT + TIES, TIES):
        shuffled = list(hops)
        rng.shuffle(shuffled)
        assert sorted_hops(shuffled) == sorted(hops, key=_hop_key)


def test_dict_and_hash_are_made_once_and_equal_the_separate_calls() -> None:
    seeds = (SeedRef("service:a", "Service", "a", 0.5), SeedRef("service:a", "Service", "a"),
             SeedRef("service:0", "Service", "zero"))
    bundle = EvidenceBundle(3, "o1", seeds, tuple(DISTINCT + TIES))
    reversed_bundle = EvidenceBundle(3, "o1", seeds[::-1], tuple(reversed(DISTINCT + TIES)))
    out = bundle.to_dict_with_hash()
    assert out == {**bundle.to_dict(), "bundle_hash": bundle.content_hash()}
    assert out == reversed_bundle.to_dict_with_hash()
    assert out["seed"] == [s.to_dict() for s in sorted(
        set(seeds), key=lambda s: (s.ceid, _canonical_json(s.to_dict())))]
    assert _canonical_json(bundle.to_dict()) == bundle.to_json()
