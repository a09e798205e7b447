"""OpenTelemetry traces: a span per request (the ASGI instrumentation), per strategy, per Cypher
template and per model call.

Spans are created through the global tracer provider. Without a configured SDK provider they
are OpenTelemetry's no-op spans (a few hundred nanoseconds each). :func:`configure_tracing`
installs the SDK provider with a batching OTLP/HTTP exporter sending to
``$OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces`` when that is set (service name
``OTEL_SERVICE_NAME``); tests install their own provider with an in-memory exporter.
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from substrate import __version__
from substrate.settings import Settings

TRACER = trace.get_tracer("substrate", __version__)
NEO4J = {"db.system": "neo4j"}


def tracer() -> trace.Tracer:
    return TRACER


def sdk_installed() -> bool:
    """Whether spans go anywhere (an SDK provider is the global one)."""
    return isinstance(trace.get_tracer_provider(), TracerProvider)


def configure_tracing(settings: Settings) -> bool:
    """Install the SDK provider with the OTLP exporter when an endpoint is configured.
    Returns whether spans are recorded (also true when a provider was installed before)."""
    if sdk_installed():
        return True
    endpoint = settings.env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")
    if not endpoint:
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    service = settings.env.get("OTEL_SERVICE_NAME") or "substrate-gateway"
    provider = TracerProvider(resource=Resource.create(
        {"service.name": service, "service.version": __version__}))
    traces = endpoint.rstrip("/") + "/v1/traces"  # the generic variable names the base URL
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=traces)))
    trace.set_tracer_provider(provider)
    return True
