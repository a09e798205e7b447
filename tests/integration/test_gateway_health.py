"""The gateway process started by ``up``: ``/healthz`` says it is alive, ``/readyz`` checks every
data part (the 503 path, with a part down, is in test_lifecycle.py)."""

from __future__ import annotations

import httpx
import pytest

from substrate import __version__
from substrate.settings import Settings

pytestmark = pytest.mark.integration


def base(settings: Settings) -> str:
    return f"http://{settings.gateway_host}:{settings.gateway_port}"


def test_healthz_is_alive_with_the_version(stack: Settings) -> None:
    response = httpx.get(f"{base(stack)}/healthz", timeout=10)
    assert response.status_code == 200
    assert response.json() == {"status": "alive", "version": __version__}


def test_readyz_names_each_part_ready(stack: Settings) -> None:
    response = httpx.get(f"{base(stack)}/readyz", timeout=15)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ready"
    parts = body["parts"]
    assert set(parts) == {"neo4j", "postgres", "redis", "nats"}
    assert all(p["ok"] is True for p in parts.values()), parts
    assert "apoc 5.26." in parts["neo4j"]["detail"] and "gds 2.13." in parts["neo4j"]["detail"]
    assert parts["postgres"]["detail"].startswith("pgvector ")
    assert parts["redis"]["detail"] == "pong"
    assert parts["nats"]["detail"].startswith("jetstream")


def test_probes_are_get_only(stack: Settings) -> None:
    response = httpx.post(f"{base(stack)}/healthz", timeout=10)
    assert response.status_code == 405
