"""Configuration files a Compose service mounts: the addresses written in them are the
service's dependencies (an OpenTelemetry collector exporting to Jaeger, an nginx proxy_pass),
with the config line as evidence and the volume line beside it; named volumes, absolute host
paths, folders and unmounted files are not read; the replay's path filter keeps such files."""

from __future__ import annotations

from pathlib import Path

from substrate.connectors.gitrepo import batch_at
from substrate.connectors.mounts import config_values, may_be_mounted
from substrate.connectors.path_filter import is_relevant
from substrate.demo.gitwriter import commit_tree, init_repo
from substrate.graph.records import EdgeRecord

COMPOSE = """\
services:
  otel-collector:
    image: otel/opentelemetry-collector-contrib:0.102.0
    volumes:
      - ./otel-collector-config.yml:/etc/otel-collector-config.yml
      - otel-data:/var/lib/otel
    command: ["--config=/etc/otel-collector-config.yml"]
  jaeger:
    image: jaegertracing/all-in-one:1.57
  proxy:
    image: nginx:1.27
    volumes:
      - type: bind
        source: ./nginx/${CONF:-default}.conf
        target: /etc/nginx/conf.d/default.conf
        read_only: true
      - /etc/ssl/certs:/etc/ssl/certs:ro
  api:
    image: example/api:1
  web:
    image: example/web:1
  orders-db:
    image: postgres:16
"""
OTEL = """\
receivers:
  otlp:
    protocols:
      http:
        endpoint: 0.0.0.0:4318
exporters:
  otlphttp/jaeger:
    endpoint: http://jaeger:4318
service:
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [otlphttp/jaeger]
"""
NGINX = """\
# web and api behind one port
upstream backend {
    server api:8000;
}
server {
    listen 80;
    location / { proxy_pass http://web:3000; }
    location /api { proxy_pass http://backend; }
}
"""
UNMOUNTED = "exporters:\n  x:\n    endpoint: http://orders-db:5432\n"


def _batch(tmp_path: Path) -> tuple[dict[tuple[str, str, str], EdgeRecord], str]:
    repo = init_repo(tmp_path / "repo")
    short = commit_tree(repo, {"app/docker-compose.yml": COMPOSE,
                               "app/otel-collector-config.yml": OTEL,
                               "app/nginx/default.conf": NGINX,
                               "app/unused-config.yml": UNMOUNTED},
                        "init", "2026-08-03T09:00:00Z")[:7]
    return {(e.type, e.src, e.dst): e for e in batch_at(repo).edges}, short


def test_a_mounted_collector_config_exporting_to_jaeger_is_a_dependency(tmp_path: Path) -> None:
    edges, short = _batch(tmp_path)
    edge = edges[("CALLS", "service:otel-collector", "service:jaeger")]
    assert edge.evidence_ref == f"app/otel-collector-config.yml#L8@{short}"
    props = edge.props
    assert props["via"] == "mounted_config" and props["var"] == "endpoint"
    assert (props["address"], props["port"]) == ("http://jaeger:4318", 4318)
    assert props["evidence_refs"] == [f"app/otel-collector-config.yml#L8@{short}",
                                      f"app/docker-compose.yml#L5@{short}"]


def test_a_mounted_text_config_names_its_upstreams(tmp_path: Path) -> None:
    edges, short = _batch(tmp_path)
    assert edges[("CALLS", "service:proxy", "service:web")].evidence_ref \
        == f"app/nginx/default.conf#L7@{short}"
    assert edges[("CALLS", "service:proxy", "service:api")].evidence_ref \
        == f"app/nginx/default.conf#L3@{short}"


def test_what_is_not_mounted_is_not_read(tmp_path: Path) -> None:
    edges, _ = _batch(tmp_path)
    assert not [k for k in edges if k[2] == "infra:orders-db"]  # only the unmounted file names it
    assert not [k for k in edges if k[1] == "service:otel-collector" and k[2] != "service:jaeger"
                and k[0] in ("CALLS", "DEPENDS_ON")]  # 0.0.0.0 is no host


def test_config_values_keep_keys_and_lines() -> None:
    assert [(k, f.value, f.line) for k, f in config_values(OTEL, "c.yml")][:2] == [
        ("endpoint", "0.0.0.0:4318", 5), ("endpoint", "http://jaeger:4318", 8)]
    text = config_values("a.url = http://x:1\n; note\n[section]\nhost: y\n", "c.ini")
    assert [(k, f.value, f.line) for k, f in text] == [("a.url", "http://x:1", 1), ("host", "y", 4)]


def test_the_replay_filter_keeps_commits_changing_a_config_file() -> None:
    assert may_be_mounted("app/nginx/default.conf") and may_be_mounted("app/otel.yml")
    assert not may_be_mounted(".github/workflows/ci.yml") and not may_be_mounted("app/main.go")
    assert is_relevant(("M", "app/nginx/default.conf"))


PROMETHEUS = """\
global:
  scrape_interval: 15s
scrape_configs:
  - job_name: customers-service
    metrics_path: /actuator/prometheus
    static_configs:
      - targets: ['customers-service:8081']
remote_write:
  - url: http://mimir:9009/api/v1/push
"""


def test_scrape_targets_are_watched_not_called() -> None:
    """A Prometheus configuration's scrape targets are what it watches: no value of them is
    read (no CALLS edge to each scraped service), while its other addresses still are."""
    values = [(k, f.value, f.line) for k, f in config_values(PROMETHEUS, "prometheus.yml")]
    assert ("url", "http://mimir:9009/api/v1/push", 9) in values
    assert not any("customers-service" in v for _, v, _ in values)
