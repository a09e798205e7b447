"""Observability on the real stack: the spans of one /search covering every strategy (read
through the SDK's in-memory exporter from an in-process app on the stack's services), the
metrics of that search scraped over HTTP from the running gateway, a second gateway exporting
OTLP to a local receiver, opening /metrics to METRICS_TOKEN and writing JSON logs."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gateway.app import create_app
from substrate.retrieval import bounds
from substrate.retrieval.registry import STRATEGIES
from substrate.settings import Settings
from tests.support.gateway_client import admin_key, auth, gateway
from tests.support.local_procs import gateway as second_gateway

pytestmark = pytest.mark.integration
QUESTION = "What does checkout depend on?"


def all_strategies() -> list[str]:
    return sorted(STRATEGIES)


@pytest.fixture(scope="module")
def spans() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


def _search_in_process(settings: Settings,
                       body: dict[str, Any]) -> tuple[httpx.Response, httpx.Response]:
    """One /search on an in-process app over the stack's services, then its /metrics."""
    app = create_app(settings)

    async def run() -> tuple[httpx.Response, httpx.Response]:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1",
                                         headers=auth(settings), timeout=120) as client:
                return await client.post("/search", json=body), await client.get("/metrics")

    return asyncio.run(run())


def test_one_search_is_traced_through_every_strategy(stack: Settings,
                                                     spans: InMemorySpanExporter,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    spans.clear()
    names = all_strategies()
    monkeypatch.setattr(bounds, "MAX_STRATEGIES", len(names))  # all of them in one request
    before = _families(generate_latest().decode())
    patient = Settings.from_env({**stack.env, "REQUEST_DEADLINE_SECONDS": "300"})
    r, scrape = _search_in_process(patient, {"query": QUESTION,
                                             "options": {"strategies": names, "rerank": True}})
    assert r.status_code == 200, r.text
    assert scrape.status_code == 200
    after = _families(scrape.text)
    for name in names:  # the same search, in the metrics: one observation per strategy
        assert _gained(before, after, "substrate_strategy_seconds", strategy=name) == 1, name
    request_id = r.headers["x-request-id"]
    found = spans.get_finished_spans()
    root = [s for s in found if s.name == "POST /search"]
    assert len(root) == 1, [s.name for s in found]
    root_span = root[0]
    attrs = root_span.attributes or {}
    assert attrs["substrate.request_id"] == request_id
    assert str(attrs["substrate.principal"]).startswith("key:")
    trace_id = root_span.context.trace_id
    in_trace = [s for s in found if s.context.trace_id == trace_id]
    by_name: dict[str, list[ReadableSpan]] = {}
    for s in in_trace:
        by_name.setdefault(s.name, []).append(s)
    for name in names:
        assert f"strategy {name}" in by_name, (name, sorted(by_name))
    cypher = [s for s in in_trace if s.name.startswith("cypher ")]
    assert cypher, sorted(by_name)
    assert all((s.attributes or {}).get("db.system") == "neo4j" for s in cypher)
    assert "rerank" in by_name
    # every strategy span is a descendant of the request span
    parents = {s.context.span_id: s.parent.span_id if s.parent else None for s in in_trace}

    def under_root(span_id: int | None) -> bool:
        while span_id is not None:
            if span_id == root_span.context.span_id:
                return True
            span_id = parents.get(span_id)
        return False

    assert all(under_root(s.context.span_id) for n in names for s in by_name[f"strategy {n}"])


def _families(text: str) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def _count(family: Any, **labels: str) -> float:
    return sum(s.value for s in family.samples if s.name.endswith("_count")
               and all(s.labels.get(k) == v for k, v in labels.items()))


def _gained(before: dict[str, Any], after: dict[str, Any], family: str,
            **labels: str) -> float:
    was = _count(before[family], **labels) if family in before else 0
    return _count(after[family], **labels) - was


def test_metrics_of_searches_scraped_over_http(stack: Settings) -> None:
    """The running gateway allows MAX_STRATEGIES per request: every strategy over 3 searches."""
    names = all_strategies()
    groups = [names[i:i + bounds.MAX_STRATEGIES]
              for i in range(0, len(names), bounds.MAX_STRATEGIES)]
    with gateway(stack) as client:
        before = _families(client.get("/metrics").text)
        for group in groups:
            r = client.post("/search", json={"query": QUESTION,
                                             "options": {"strategies": group}})
            assert r.status_code == 200, r.text
        scrape = client.get("/metrics")
    assert scrape.status_code == 200
    assert scrape.headers["content-type"].startswith("text/plain")
    after = _families(scrape.text)
    for name in names:
        assert _gained(before, after, "substrate_strategy_seconds", strategy=name) == 1, name
    assert _count(after["substrate_http_request_seconds"], route="/search", method="POST") >= 1
    assert _count(after["substrate_cypher_template_seconds"]) >= 1
    for family in ("substrate_cache_hits", "substrate_cache_misses", "substrate_cache_hit_ratio",
                   "substrate_policy_decisions", "substrate_cache_invalidation_lag_seconds",
                   "process_cpu_seconds"):
        assert family in after, family


def test_metrics_refuse_a_reader(stack: Settings) -> None:
    import psycopg

    from substrate.security import apikeys

    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        _, key = apikeys.create(conn, "metrics-test", apikeys.Grant(("acme",), "internal",
                                                                     ("reader",)))
    with gateway(stack, key=key) as client:
        r = client.get("/metrics")
    assert r.status_code == 403
    assert r.json()["error"]["code"] == "forbidden"


class _OtlpReceiver(BaseHTTPRequestHandler):
    received: list[ExportTraceServiceRequest] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/v1/traces":
            message = ExportTraceServiceRequest()
            message.ParseFromString(body)
            self.received.append(message)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def otlp() -> Iterator[tuple[str, list[ExportTraceServiceRequest]]]:
    received: list[ExportTraceServiceRequest] = []
    handler = type("Receiver", (_OtlpReceiver,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def _exported(received: list[ExportTraceServiceRequest]) -> list[tuple[str, dict[str, str]]]:
    out = []
    for message in received:
        for rs in message.resource_spans:
            resource = {a.key: a.value.string_value for a in rs.resource.attributes}
            out += [(s.name, resource) for ss in rs.scope_spans for s in ss.spans]
    return out


def test_a_gateway_exports_otlp_opens_metrics_to_its_token_and_logs_json(
        stack: Settings, tmp_path: Path,
        otlp: tuple[str, list[ExportTraceServiceRequest]]) -> None:
    url, received = otlp
    token = "metrics-" + "x" * 24
    with second_gateway(tmp_path, stack.tenant, OTEL_EXPORTER_OTLP_ENDPOINT=url,
                        OTEL_SERVICE_NAME="substrate-test", OTEL_BSP_SCHEDULE_DELAY="100",
                        METRICS_TOKEN=token, LOG_FORMAT="json") as client:
        # a question no earlier test asked: a cache hit would run no strategy (and no span)
        r = client.post("/search", json={"query": f"{QUESTION} ({uuid.uuid4().hex[:8]})"})
        assert r.status_code == 200, r.text
        assert r.json()["cache"]["hit"] is False
        request_id = r.headers["x-request-id"]
        bare = {"X-Tenant": stack.tenant}
        scrape = client.get("/metrics", headers={**bare, "Authorization": f"Bearer {token}"})
        assert scrape.status_code == 200
        assert "substrate_strategy_seconds" in scrape.text
        # the metrics token opens /metrics only
        other = client.get("/cache/stats", headers={**bare, "Authorization": f"Bearer {token}"})
        assert other.status_code == 401
        wrong = client.get("/metrics", headers={**bare, "Authorization": "Bearer metrics-no"})
        assert wrong.status_code == 401
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(
                n == "POST /search" for n, _ in _exported(received)):
            time.sleep(0.2)
    exported = _exported(received)
    names = {n for n, _ in exported}
    assert "POST /search" in names, names
    assert any(n.startswith("strategy ") for n in names), names
    assert any(n.startswith("cypher ") for n in names), names
    assert all(res.get("service.name") == "substrate-test" for _, res in exported)
    log_file = next(tmp_path.glob("gateway-*.log"))
    lines = [json.loads(line) for line in log_file.read_text().splitlines()
             if line.startswith("{")]
    access = [line for line in lines if line.get("logger") == "substrate.access"
              and line.get("request_id") == request_id]
    assert access, lines[-5:]
    assert access[0]["route"] == "/search" and access[0]["status"] == 200
    assert access[0]["principal"].startswith("key:")
    assert access[0]["tenant"] == stack.tenant
    assert admin_key(stack)  # the stack's key opened the requests above
