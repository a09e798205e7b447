"""The Browser guide from the running gateway: no credentials, CORS for Neo4j Browser's own
origin only, and every query it offers runs on the stack's Neo4j with its parameters."""

from __future__ import annotations

import httpx
import pytest
from neo4j import Driver

from substrate import browser
from substrate.settings import Settings
from tests.support.gateway_client import base_url

pytestmark = pytest.mark.integration


def test_the_guide_is_served_without_credentials_to_the_browser_origin(stack: Settings) -> None:
    origin = f"http://localhost:{stack.neo4j_http_port}"
    r = httpx.get(f"{base_url(stack)}/browser/guide", headers={"Origin": origin}, timeout=30)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert r.headers["access-control-allow-origin"] == origin
    assert r.text.count("<slide") == len(browser.browser_scripts()) + 3
    other = httpx.get(f"{base_url(stack)}/browser/guide",
                      headers={"Origin": "http://evil.example"}, timeout=30)
    assert other.status_code == 200 and "access-control-allow-origin" not in other.headers


@pytest.mark.parametrize("path", browser.browser_scripts(), ids=lambda p: p.stem)
def test_every_guide_query_runs(driver: Driver, path: object) -> None:
    script = browser.parse_script(path.read_text())  # type: ignore[attr-defined]
    params = {name: driver.execute_query(f"RETURN {expr} AS v").records[0]["v"]
              for name, expr in script.params.items()}
    records, _, _ = driver.execute_query(script.query, params, routing_="r")
    assert isinstance(records, list)
