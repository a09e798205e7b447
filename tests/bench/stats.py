"""Latency figures shared by the benchmarks: one definition of a percentile for all of them."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``samples``, interpolated linearly between closest ranks
    (numpy's default); ``samples`` must not be empty."""
    ordered = sorted(samples)
    if not ordered:
        raise ValueError("no samples")
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def latency(samples_ms: Sequence[float], digits: int = 2) -> dict[str, float | int | None]:
    """``n``, p50/p95/p99, min and max of latencies in milliseconds (None when no samples)."""
    if not samples_ms:
        return {"n": 0, "p50_ms": None, "p95_ms": None, "p99_ms": None, "min_ms": None,
                "max_ms": None}
    return {"n": len(samples_ms),
            **{f"p{round(q * 100)}_ms": round(percentile(samples_ms, q), digits)
               for q in (0.5, 0.95, 0.99)},
            "min_ms": round(min(samples_ms), digits), "max_ms": round(max(samples_ms), digits)}
