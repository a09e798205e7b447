"""Observability logic without the stack: batch metric files, the cache collector, JSON log
fields, route templates and the request histogram, the metrics token."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from gateway.observe import ObserveMiddleware
from substrate.cache import CacheStats
from substrate.observability import metrics
from substrate.observability.logs import (
    RequestContextFilter,
    bind_request,
    json_formatter,
    unbind_request,
)
from substrate.security.principal import Principal

PRINCIPAL = Principal("key:k1", "api_key", frozenset({"acme"}), "internal",
                      frozenset({"reader"}))


def sample(text: str, name: str, **labels: str) -> float | None:
    for line in text.splitlines():
        if line.startswith((name + "{", name + " ")) and all(
                f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_batch_files_are_served_with_a_batch_label(tmp_path: Path) -> None:
    metrics.observe_ingest("jsonl:orgs.jsonl", {"nodes_added": 7, "edges_added": 3}, 0.4, True)
    metrics.GDS_JOB_SECONDS.labels("communities", "ok").observe(2.5)
    written = metrics.write_batch_metrics(tmp_path, "gds-communities")
    assert written == tmp_path / "metrics" / "gds-communities.prom"
    (tmp_path / "metrics" / "other.prom").write_text("unrelated_total 3\n")
    registry = CollectorRegistry()
    registry.register(metrics.BatchFileCollector(tmp_path / "metrics"))
    text = generate_latest(registry).decode()
    assert sample(text, "substrate_ingest_elements_total", source="jsonl", kind="nodes_added",
                  batch="gds-communities") is not None
    assert sample(text, "substrate_gds_job_seconds_count", job="communities",
                  batch="gds-communities") is not None
    assert "unrelated_total" not in text  # only the batch families


def test_batch_collector_without_a_folder_yields_nothing(tmp_path: Path) -> None:
    assert list(metrics.BatchFileCollector(tmp_path / "nope").collect()) == []


def test_cache_collector_reports_counters_and_ratio() -> None:
    collector = metrics.CacheCollector()
    assert list(collector.collect()) == []  # no cache bound: nothing to say
    collector.stats = CacheStats(hits=3, misses=1, stale=2)
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    assert sample(text, "substrate_cache_hits_total") == 3
    assert sample(text, "substrate_cache_stale_total") == 2
    assert sample(text, "substrate_cache_hit_ratio") == 0.75


def test_policy_decisions_are_counted_by_action_family() -> None:
    class D:
        def __init__(self, action: str, decision: str) -> None:
            self.action, self.decision = action, decision

    before = metrics.POLICY_DECISIONS.labels("read", "redacted")._value.get()
    metrics.count_policy_decisions([D("read:/search", "redacted"), D("read:/cypher",
                                                                     "redacted")])
    assert metrics.POLICY_DECISIONS.labels("read", "redacted")._value.get() == before + 2


def test_model_calls_count_tokens_and_cost() -> None:
    tokens = metrics.MODEL_TOKENS.labels("explain", "m1", "prompt")
    before = tokens._value.get()
    metrics.observe_model_call("explain", "m1", 120, 30, 0.015, 0.2, True)
    assert tokens._value.get() == before + 120
    assert metrics.MODEL_COST.labels("explain", "m1")._value.get() >= 0.015


def _log_line(state: dict[str, Any], tenant: str | None) -> dict[str, Any]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(json_formatter())
    handler.addFilter(RequestContextFilter())
    logger = logging.getLogger("substrate.test.observability")
    logger.addHandler(handler)
    logger.propagate = False
    token = bind_request(state, tenant)
    try:
        logger.warning("strategy %s failed", "vector")
    finally:
        unbind_request(token)
        logger.removeHandler(handler)
    line: dict[str, Any] = json.loads(out.getvalue())
    return line


def test_json_logs_carry_request_id_tenant_and_principal() -> None:
    line = _log_line({"request_id": "r-123", "principal": PRINCIPAL}, None)
    assert line["message"] == "strategy vector failed"
    assert line["level"] == "WARNING"
    assert (line["request_id"], line["tenant"], line["principal"]) == ("r-123", "acme",
                                                                       "key:k1")
    assert _log_line({"request_id": "r-9"}, "globex")["tenant"] == "globex"


def test_json_logs_outside_a_request_have_no_request_fields() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(json_formatter())
    handler.addFilter(RequestContextFilter())
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "started", None, None)
    handler.handle(record)
    assert "request_id" not in json.loads(out.getvalue())


async def _item(request: Request) -> JSONResponse:
    if request.path_params["item_id"] == "boom":
        return JSONResponse({"error": "no"}, status_code=404)
    return JSONResponse({"ok": True})


@pytest.mark.parametrize(("path", "status"), [("/items/a1", "200"), ("/items/boom", "404"),
                                              ("/nowhere", "404")])
def test_requests_are_timed_by_route_template(path: str, status: str) -> None:
    app = Starlette(routes=[Route("/items/{item_id}", _item)],
                    middleware=[Middleware(ObserveMiddleware)])
    route = "/items/{item_id}" if path.startswith("/items") else "unmatched"
    child = metrics.HTTP_SECONDS.labels("GET", route, status)
    before = child._sum.get(), sum(b.get() for b in child._buckets)

    async def get() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://t") as client:
            return await client.get(path)

    r = asyncio.run(get())
    assert str(r.status_code) == status
    after = child._sum.get(), sum(b.get() for b in child._buckets)
    assert after[1] == before[1] + 1 and after[0] > before[0]


def test_metric_names_are_unique_in_the_default_registry() -> None:
    text = generate_latest().decode()
    types = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")]
    assert len(types) == len(set(types))
    assert "substrate_http_request_seconds" in types
    # batch figures (substrate_gds_job_seconds, ...) appear only through the files the jobs
    # leave in $SUBSTRATE_HOME/metrics, once a gateway in this process serves them: once each
    assert isinstance(metrics.INGEST_ELEMENTS, Counter)
