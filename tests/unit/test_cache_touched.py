"""The cache indexes an entry by the ceids in its JSON text: the same set as a walk of the
value, for keys that look like ceids, escaped quotes, whitespace, long and non-ASCII strings."""

from __future__ import annotations

import random
from typing import Any

from substrate import jsonwire
from substrate.cache import touched_ids, touched_ids_in

PREFIXES = frozenset({"service", "team", "adr", "infra"})
PIECES = ["service:checkout", "team:payments", "adr:0007", "infra:redis", "unknown:x",
          "service:", "service:a b", 'service:say "hi"', "service:back\\slash", "Service:x",
          "service:x\n", "service:ünïcode", "service:tab\there", "service:" + "x" * 300,
          "service:" + "y" * 292, ":service:x", "service:x:y", "plain text", "", "a:b",
          'he said "service:quoted" here', "service:\u00a0nbsp"]


def random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return rng.choice([*PIECES, 1, 2.5, None, True])
    if roll < 0.7:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(PIECES + ["ceid", "from", "to"]): random_value(rng, depth + 1)
            for _ in range(rng.randint(0, 4))}


def test_the_text_scan_finds_what_the_walk_finds() -> None:
    rng = random.Random(12)
    for _ in range(500):
        value = {"result": random_value(rng)}
        assert touched_ids_in(jsonwire.dumps(value), PREFIXES) == touched_ids(value, PREFIXES)


def test_keys_are_not_ids_and_values_are() -> None:
    value = {"service:key": "team:value", "list": ["adr:1", {"infra:k": 1}]}
    assert touched_ids_in(jsonwire.dumps(value), PREFIXES) == {"team:value", "adr:1"}
