"""compose.yaml describes the same parts as the local default, with the same names."""

from __future__ import annotations

import re
from urllib.parse import urlparse

import yaml

from substrate.settings import ENV_DEFAULTS, PROJECT_ROOT, Settings

COMPOSE = yaml.safe_load((PROJECT_ROOT / "compose.yaml").read_text())
SERVICES = COMPOSE["services"]


def host_ports(service: str) -> set[int]:
    return {int(p.split(":")[-2]) for p in SERVICES[service].get("ports", [])}


def test_services_are_the_parts_of_the_stack() -> None:
    assert set(SERVICES) == {"neo4j", "postgres", "redis", "nats", "gateway"}


def test_images_are_the_pinned_lines() -> None:
    assert SERVICES["neo4j"]["image"].startswith("neo4j:5.26")
    assert SERVICES["postgres"]["image"] == "pgvector/pgvector:pg16"
    assert SERVICES["redis"]["image"].startswith("redis:7")
    assert "-js" in SERVICES["nats"]["command"]


def test_ports_agree_with_the_local_defaults() -> None:
    s = Settings.from_env({})
    assert {s.neo4j_bolt_port, s.neo4j_http_port} <= host_ports("neo4j")
    assert s.postgres_port in host_ports("postgres")
    assert s.redis_port in host_ports("redis")
    assert s.nats_port in host_ports("nats")
    assert s.gateway_port in host_ports("gateway")


def test_gateway_variables_are_the_ones_settings_reads() -> None:
    env = SERVICES["gateway"]["environment"]
    assert set(env) <= set(ENV_DEFAULTS), set(env) - set(ENV_DEFAULTS)
    for name in ("NEO4J_URI", "NEO4J_PASSWORD", "POSTGRES_DSN", "REDIS_URL", "NATS_URL"):
        assert name in env


def test_gateway_urls_name_compose_services_on_the_same_ports() -> None:
    env = SERVICES["gateway"]["environment"]
    s = Settings.from_env({})
    for var, service, port in (
        ("NEO4J_URI", "neo4j", s.neo4j_bolt_port),
        ("REDIS_URL", "redis", s.redis_port),
        ("NATS_URL", "nats", s.nats_port),
        ("POSTGRES_DSN", "postgres", s.postgres_port),
    ):
        url = urlparse(re.sub(r"\$\{[^}]*\}", "x", env[var]))
        assert (url.hostname, url.port) == (service, port), var


def test_passwords_come_from_the_environment_with_no_default() -> None:
    text = (PROJECT_ROOT / "compose.yaml").read_text()
    used = re.findall(r"\$\{(\w*PASSWORD)(:[?-])", text)
    assert {name for name, _ in used} == {
        "NEO4J_PASSWORD", "POSTGRES_PASSWORD", "REDIS_PASSWORD", "NATS_PASSWORD"}
    assert all(op == ":?" for _, op in used), used
    env = SERVICES["gateway"]["environment"]
    for var, secret in (("POSTGRES_DSN", "POSTGRES_PASSWORD"), ("REDIS_URL", "REDIS_PASSWORD"),
                        ("NATS_URL", "NATS_PASSWORD")):
        assert "${" + secret + ":?" in env[var], var
