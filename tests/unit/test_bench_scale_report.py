"""The scale benchmark's report and plots when sizes measured different use cases."""

from pathlib import Path
from typing import Any

from tests.bench.bench_scale import plot_series, report


def _row(uc: str, p95: float) -> dict[str, Any]:
    timing = {"p50_ms": p95 / 2, "p95_ms": p95, "p99_ms": p95}
    return {"use_case": uc, "intent": "x", "uncached": timing, "cached": timing}


def _figures() -> dict[str, Any]:
    return {"measured_at": "now", "load_average_1m": [1.0, 1.0], "sizes": [
        {"size": "S", "load": {"edges": 10_000},
         "search": [_row(f"RSN-UC-0{i}", 10.0 * i) for i in range(1, 9)],
         "direct": [{"endpoint": "/dependencies", "error": "boom"}]},
        {"size": "M", "load": {"edges": 200_000},
         "search": [_row("RSN-UC-07", 90.0), _row("RSN-UC-01", 40.0)], "direct": []},
    ]}


def test_series_keep_each_label_with_its_own_points() -> None:
    series = plot_series(_figures()["sizes"], "search")
    assert series["RSN-UC-01"] == [(10_000, 10.0), (200_000, 40.0)]
    assert series["RSN-UC-07"] == [(10_000, 70.0), (200_000, 90.0)]
    assert series["RSN-UC-03"] == [(10_000, 30.0)]
    assert plot_series(_figures()["sizes"], "direct") == {}  # a failed endpoint: no point


def test_report_with_different_use_case_sets_per_size(tmp_path: Path) -> None:
    path = report(_figures(), tmp_path)
    text = path.read_text()
    assert "| RSN-UC-07 | M | 45.0 / 90.0 / 90.0 |" in text
    assert "error: boom" in text
    assert (tmp_path / "scale-search.png").is_file()
    assert not (tmp_path / "scale-direct.png").exists()


def test_report_says_when_and_at_which_commit_each_size_was_measured(tmp_path: Path) -> None:
    figures = _figures()
    figures["sizes"][1] |= {"measured_at": "2026-11-24T02:17:00+00:00", "commit": "938ca94"}
    text = report(figures, tmp_path).read_text()
    assert "| S | not recorded (?) | 10,000 |" in text  # kept from a run that did not say
    assert "| M | 2026-11-24T02:17:00+00:00 (938ca94) | 200,000 |" in text
