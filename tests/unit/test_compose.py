"""compose.yaml describes the same parts as the local default, with the same names; its
"replicas" profile adds three gateways with the same settings behind a load balancer. The file
is valid by the Compose Specification's JSON schema (the copy check-jsonschema vendors)."""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any
from urllib.parse import urlparse

import jsonschema
import yaml

from substrate.settings import ENV_DEFAULTS, PROJECT_ROOT, Settings

COMPOSE = yaml.safe_load((PROJECT_ROOT / "compose.yaml").read_text())
SERVICES = COMPOSE["services"]
DEFAULT_SERVICES = {"neo4j", "postgres", "redis", "nats", "gateway"}
REPLICAS = ("gateway-1", "gateway-2", "gateway-3")


def compose_spec_schema() -> dict[str, Any]:
    vendor = resources.files("check_jsonschema.builtin_schemas.vendor")
    schema: dict[str, Any] = json.loads((vendor / "compose-spec.json").read_text())
    return schema


def in_profile(profile: str | None) -> set[str]:
    """The services ``docker compose [--profile P] up`` starts (``None``: no profile)."""
    return {name for name, s in SERVICES.items()
            if not s.get("profiles") or (profile is not None and profile in s["profiles"])}


def test_the_file_is_valid_by_the_compose_specification() -> None:
    schema = compose_spec_schema()
    assert schema["title"] == "Compose Specification"
    jsonschema.validators.validator_for(schema)(schema).validate(COMPOSE)


def test_the_schema_check_catches_a_broken_file() -> None:
    schema = compose_spec_schema()
    broken = {"services": {"gateway": {**SERVICES["gateway"], "depends_on": {"neo4j": "healthy"}}}}
    assert list(jsonschema.validators.validator_for(schema)(schema).iter_errors(broken))


def host_ports(service: str) -> set[int]:
    return {int(p.split(":")[-2]) for p in SERVICES[service].get("ports", [])}


def test_services_are_the_parts_of_the_stack() -> None:
    assert in_profile(None) == DEFAULT_SERVICES


def test_the_replicas_profile_adds_three_gateways_a_load_balancer_and_one_migration() -> None:
    assert in_profile("replicas") - DEFAULT_SERVICES == {*REPLICAS, "lb", "migrate"}


def test_replicas_have_the_gateway_settings_and_dependencies() -> None:
    gateway = SERVICES["gateway"]
    for name in (*REPLICAS, "migrate"):
        replica = SERVICES[name]
        assert replica["environment"] == gateway["environment"], name
        assert replica["build"] == gateway["build"], name
        assert {k: v for k, v in replica["depends_on"].items() if k != "migrate"} \
            == gateway["depends_on"], name
    for name in REPLICAS:
        assert SERVICES[name]["command"] == gateway["command"]
        assert SERVICES[name]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"}
        assert "ports" not in SERVICES[name]  # reached through the load balancer only
    assert SERVICES["migrate"]["command"] == ["substrate", "migrate", "up"]


def test_the_load_balancer_checks_readiness_of_every_replica() -> None:
    lb = SERVICES["lb"]
    assert lb["image"].startswith("haproxy:")
    assert set(lb["depends_on"]) == set(REPLICAS)
    (mount,) = lb["volumes"]
    source, target, _ = mount.split(":")
    assert target == "/usr/local/etc/haproxy/haproxy.cfg"
    config = (PROJECT_ROOT / source).read_text()
    port = int(SERVICES["gateway"]["environment"]["GATEWAY_PORT"])
    servers = re.findall(r"^\s*server (\S+) (\S+):(\d+)", config, re.MULTILINE)
    assert servers == [(name, name, str(port)) for name in REPLICAS]
    assert re.findall(r"^\s*bind :(\d+)$", config, re.MULTILINE) \
        == [lb["ports"][0].split(":")[-1]]
    assert "uri /readyz hdr Host localhost" in config  # loopback: allowed by default
    assert host_ports("lb").isdisjoint(host_ports("gateway"))


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
