"""Observability: what the service tells an operator about itself.

* :mod:`.metrics` — Prometheus metrics (prometheus-client): request latency per endpoint,
  strategy and Cypher template, cache hits and invalidation lag, model tokens and cost, policy
  decisions, GDS job durations and ingest rates; batch processes (ingest, GDS jobs) leave
  their figures in ``$SUBSTRATE_HOME/metrics/*.prom`` and the gateway serves them too.
* :mod:`.tracing` — OpenTelemetry spans (request, strategy, Cypher template, model call),
  exported over OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set; no-op spans otherwise.
* :mod:`.logs` — JSON log lines carrying the request id, tenant and principal.
* :mod:`.progress` — progress bars (rate, ETA) for long operator commands, quiet when the
  output is not a terminal.
"""
