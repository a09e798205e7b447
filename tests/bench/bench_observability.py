"""What observability costs per request, measured in-process (no network, no database): the
shared 2-core machine makes end-to-end before/after runs of bench_endpoints differ by more
than the effect, so this isolates it.

* ``request``: a trivial Starlette route called through ASGI ``REPEATS`` times, bare, with
  :class:`gateway.observe.ObserveMiddleware` (histogram, log context, access line as JSON to
  a discarding handler; also with the access line off, LOG_LEVEL=WARNING), and with
  OpenTelemetry's ASGI middleware on top recording into the SDK (a batch processor to an
  in-memory exporter): microseconds per request, median of ROUNDS;
* ``span+histogram``: one strategy/template span and histogram observation, with the no-op
  tracer (no exporter configured: the default) and with the SDK.

Run: ``.substrate/venv/bin/python -m tests.bench.bench_observability``. Writes
``$SUBSTRATE_HOME/bench/observability.json``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import time
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from gateway.observe import ObserveMiddleware
from substrate.observability.logs import RequestContextFilter, json_formatter, lean_records
from substrate.observability.metrics import STRATEGY_SECONDS
from substrate.settings import Settings

REPEATS = 3000
ROUNDS = 5


async def _item(request: Request) -> JSONResponse:
    return JSONResponse({"id": request.path_params["item_id"]})


def _app(middleware: list[Middleware]) -> Starlette:
    return Starlette(routes=[Route("/items/{item_id}", _item)], middleware=middleware)


async def _call(app: Starlette) -> None:
    scope: dict[str, Any] = {"type": "http", "method": "GET", "path": "/items/a1",
                             "raw_path": b"/items/a1", "query_string": b"", "root_path": "",
                             "headers": [(b"host", b"127.0.0.1")], "scheme": "http",
                             "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1234),
                             "http_version": "1.1", "asgi": {"version": "3.0"}}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        return None

    await app(scope, receive, send)


def _per_request_us(app: Starlette) -> float:
    async def run() -> float:
        await _call(app)  # warm-up (builds the middleware stack)
        rounds = []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            for _ in range(REPEATS):
                await _call(app)
            rounds.append((time.perf_counter() - started) / REPEATS * 1e6)
        return statistics.median(rounds)

    return asyncio.run(run())


def _span_us(work: Callable[[], None]) -> float:
    rounds = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        for _ in range(REPEATS):
            work()
        rounds.append((time.perf_counter() - started) / REPEATS * 1e6)
    return statistics.median(rounds)


def _one_strategy_span() -> None:
    with trace.get_tracer("bench").start_as_current_span("strategy bench") as span:
        span.set_attribute("substrate.hits", 3)
    STRATEGY_SECONDS.labels("bench", "ok").observe(0.001)


def _quiet_access_log() -> None:
    lean_records()  # as the gateway's configure_logging does
    handler = logging.StreamHandler(open("/dev/null", "w"))  # noqa: SIM115 - for the run
    handler.setFormatter(json_formatter())
    handler.addFilter(RequestContextFilter())
    access = logging.getLogger("substrate.access")
    access.handlers, access.propagate = [handler], False
    access.setLevel(logging.INFO)


def _without_access_line(run: Callable[[], float]) -> float:
    access = logging.getLogger("substrate.access")
    access.setLevel(logging.WARNING)  # LOG_LEVEL=WARNING
    try:
        return run()
    finally:
        access.setLevel(logging.INFO)


def measure() -> dict[str, float]:
    _quiet_access_log()
    figures = {
        "request_bare_us": _per_request_us(_app([])),
        "request_observed_us": _per_request_us(_app([Middleware(ObserveMiddleware)])),
        "request_observed_no_access_line_us": _without_access_line(
            lambda: _per_request_us(_app([Middleware(ObserveMiddleware)]))),
        "span_histogram_noop_us": _span_us(_one_strategy_span),
    }
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
    trace.set_tracer_provider(provider)
    figures["request_observed_traced_us"] = _per_request_us(_app([
        Middleware(OpenTelemetryMiddleware, exclude_spans=["receive", "send"]),
        Middleware(ObserveMiddleware)]))
    figures["span_histogram_sdk_us"] = _span_us(_one_strategy_span)
    provider.shutdown()
    figures["observe_added_us"] = figures["request_observed_us"] - figures["request_bare_us"]
    figures["tracing_added_us"] = (figures["request_observed_traced_us"]
                                   - figures["request_observed_us"])
    return {k: round(v, 2) for k, v in figures.items()}


def main() -> None:
    figures = measure()
    for name, value in figures.items():
        print(f"{name:<28} {value:>9.2f} us")
    out = Settings.from_env().home / "bench" / "observability.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2))
    print(f"-> {out}")


if __name__ == "__main__":
    main()
