"""The benchmarks' one percentile definition."""

import pytest

from tests.bench.stats import latency, percentile


def test_percentile_interpolates_between_ranks() -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.95) == pytest.approx(4.8)
    assert percentile([7.0], 0.99) == 7.0


def test_percentile_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError):
        percentile([], 0.5)


def test_latency_summary() -> None:
    out = latency([float(i) for i in range(1, 101)])
    assert out == {"n": 100, "p50_ms": 50.5, "p95_ms": 95.05, "p99_ms": 99.01, "min_ms": 1.0,
                   "max_ms": 100.0}
    assert latency([])["p95_ms"] is None
