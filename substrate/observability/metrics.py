"""Prometheus metrics (prometheus-client's default registry) and where their figures come from.

The gateway serves them at ``GET /metrics``. Counters the request path already keeps (the
query cache's :class:`~substrate.cache.CacheStats`) are read at scrape time by a collector,
so the hot path pays nothing for them. Batch processes (``substrate ingest``, ``python -m
gds_jobs``) are gone before any scrape: they write their figures to
``$SUBSTRATE_HOME/metrics/<name>.prom`` (the node-exporter textfile format,
:func:`write_batch_metrics`) and the gateway serves those samples with a ``batch`` label.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, write_to_textfile
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
LONG_SECONDS = (0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
BATCH_FAMILIES = ("substrate_gds_job", "substrate_ingest")
BATCH = CollectorRegistry()  # batch processes' figures: written to a file, never served live

HTTP_SECONDS = Histogram(
    "substrate_http_request_seconds", "Gateway request latency by route template and status",
    ("method", "route", "status"), buckets=SECONDS)
STRATEGY_SECONDS = Histogram(
    "substrate_strategy_seconds", "Latency of one /search retrieval strategy",
    ("strategy", "status"), buckets=SECONDS)
CYPHER_SECONDS = Histogram(
    "substrate_cypher_template_seconds", "Latency of one read Cypher template",
    ("template",), buckets=SECONDS)
INVALIDATION_LAG = Histogram(
    "substrate_cache_invalidation_lag_seconds",
    "Delay from a graph.updated event's publication to its cache eviction", buckets=SECONDS)
MODEL_TOKENS = Counter(
    "substrate_model_tokens", "Model tokens spent", ("role", "model", "kind"))
MODEL_COST = Counter("substrate_model_cost_usd", "Model cost (MODEL_COSTS)", ("role", "model"))
MODEL_SECONDS = Histogram(
    "substrate_model_call_seconds", "Latency of one model call", ("role", "ok"),
    buckets=SECONDS)
POLICY_DECISIONS = Counter(
    "substrate_policy_decisions", "Policy decisions (audited)", ("action", "decision"))
GDS_JOB_SECONDS = Histogram(
    "substrate_gds_job_seconds", "Duration of a GDS job run", ("job", "status"),
    buckets=LONG_SECONDS, registry=BATCH)
INGEST_ELEMENTS = Counter(
    "substrate_ingest_elements", "Graph elements written by ingestion", ("source", "kind"),
    registry=BATCH)
INGEST_BATCHES = Counter(
    "substrate_ingest_batches", "Ingest batches committed (a snapshot each, or unchanged)",
    ("source", "outcome"), registry=BATCH)
INGEST_SECONDS = Histogram(
    "substrate_ingest_batch_seconds", "Duration of one ingest batch commit", ("source",),
    buckets=LONG_SECONDS, registry=BATCH)


def observe_model_call(role: str, model: str, prompt: int, completion: int, cost: float,
                       seconds: float, ok: bool) -> None:
    MODEL_SECONDS.labels(role, "true" if ok else "false").observe(seconds)
    if prompt:
        MODEL_TOKENS.labels(role, model, "prompt").inc(prompt)
    if completion:
        MODEL_TOKENS.labels(role, model, "completion").inc(completion)
    if cost:
        MODEL_COST.labels(role, model).inc(cost)


def count_policy_decisions(decisions: Iterable[Any]) -> None:
    """``action`` is the family of the audited action (``authenticate``, ``read``, ...)."""
    for d in decisions:
        POLICY_DECISIONS.labels(str(d.action).split(":", 1)[0][:40], d.decision).inc()


def observe_ingest(source: str, counts: dict[str, int], seconds: float,
                   changed: bool) -> None:
    family = source.split(":", 1)[0]  # "jsonl:file.jsonl" -> "jsonl": bounded label values
    INGEST_BATCHES.labels(family, "snapshot" if changed else "unchanged").inc()
    INGEST_SECONDS.labels(family).observe(seconds)
    for kind, n in counts.items():
        if n:
            INGEST_ELEMENTS.labels(family, kind).inc(n)


# --- the query cache, read at scrape time ------------------------------------------------
class CacheCollector(Collector):
    """The bound cache's counters (hits, misses, ...) and hit ratio, read when scraped."""

    def describe(self) -> list[Metric]:
        return []

    def __init__(self) -> None:
        self.stats: Any = None  # substrate.cache.CacheStats of the serving app

    def collect(self) -> Iterator[Metric]:
        s = self.stats
        if s is None:
            return
        for name in ("hits", "misses", "stored", "not_stored", "stale", "unavailable", "errors"):
            yield CounterMetricFamily(f"substrate_cache_{name}", f"Query cache {name}",
                                      value=getattr(s, name))
        looked = s.hits + s.misses
        yield GaugeMetricFamily("substrate_cache_hit_ratio",
                                "Query cache hits / (hits + misses) since start",
                                value=s.hits / looked if looked else 0.0)


CACHE = CacheCollector()
REGISTRY.register(CACHE)


def bind_cache(stats: Any) -> None:
    CACHE.stats = stats


# --- batch processes ---------------------------------------------------------------------
def metrics_dir(home: Path) -> Path:
    return home / "metrics"


def write_batch_metrics(home: Path, name: str) -> Path:
    """This process's batch figures into ``metrics/<name>.prom`` (written atomically)."""
    folder = metrics_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.prom"
    write_to_textfile(str(path), BATCH)
    return path


class BatchFileCollector(Collector):
    """The ingest and GDS-job families of every ``*.prom`` file, labelled ``batch=<file>``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def describe(self) -> list[Metric]:
        return []  # names vary with the files: no check at registration

    def collect(self) -> Iterator[Metric]:
        merged: dict[str, Metric] = {}
        files = sorted(self.folder.glob("*.prom")) if self.folder.is_dir() else []
        for path in files:
            try:
                text = path.read_text()
            except OSError:
                continue
            for family in text_string_to_metric_families(text):
                if not family.name.startswith(BATCH_FAMILIES):
                    continue
                out = merged.setdefault(family.name,
                                        Metric(family.name, family.documentation, family.type))
                for s in family.samples:
                    out.add_sample(s.name, {**s.labels, "batch": path.stem}, s.value)
        yield from merged.values()


_BATCH_FOLDERS: set[str] = set()


def serve_batch_files(home: Path) -> None:
    """Register (once per folder) the collector of ``home``'s batch metric files."""
    folder = os.fspath(metrics_dir(home))
    if folder not in _BATCH_FOLDERS:
        _BATCH_FOLDERS.add(folder)
        REGISTRY.register(BatchFileCollector(metrics_dir(home)))
