"""The served OpenAPI document is valid (openapi-spec-validator) and complete (every route,
path parameter and request body), and the running gateway keeps to it: a bounded
schemathesis run with the admin key finds 0 server errors and 0 schema/status/content-type
mismatches. ``SCHEMATHESIS_EXAMPLES`` (default 4 per operation) sets the run's length; the
benchmarks run it longer (tests/bench/bench_load.py)."""

from __future__ import annotations

import os
import re
from collections.abc import Hashable, Mapping
from typing import Any, cast

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from openapi_spec_validator import OpenAPIV30SpecValidator
from schemathesis.checks import ALL_CHECKS
from starlette.routing import Route

from gateway.app import routes
from substrate.settings import Settings
from tests.support.gateway_client import auth, base_url

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "4"))


@pytest.fixture(scope="module")
def served(stack: Settings) -> dict[str, Any]:
    response = httpx.get(f"{base_url(stack)}/openapi.json", timeout=30)
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


def test_the_served_document_is_valid(served: dict[str, Any]) -> None:
    spec = cast(Mapping[Hashable, Any], served)
    errors = [e.message for e in OpenAPIV30SpecValidator(spec).iter_errors()]
    assert errors == []


def test_every_route_parameter_and_body_is_declared(served: dict[str, Any]) -> None:
    paths = served["paths"]
    http_routes = {r.path for r in routes() if isinstance(r, Route) and r.include_in_schema}
    assert http_routes <= set(paths), http_routes - set(paths)
    for path, ops in paths.items():
        for method, op in ops.items():
            declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            assert declared == set(re.findall(r"{(\w+)}", path)), (method, path)
            if method == "post":
                assert "application/json" in op["requestBody"]["content"], path
            if path not in ("/healthz", "/readyz", "/openapi.json"):
                assert {"400", "401", "404", "503"} <= set(op["responses"]), path
            for code, response in op["responses"].items():
                assert response["description"] and "content" in response, (path, code)


api = schemathesis.from_pytest_fixture("api_schema")


@pytest.fixture(scope="module")
def api_schema(stack: Settings) -> Any:
    return schemathesis.from_uri(f"{base_url(stack)}/openapi.json",
                                 base_url=base_url(stack))


@pytest.fixture(scope="module")
def key_headers(stack: Settings) -> dict[str, str]:
    return auth(stack)


@api.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_the_gateway_keeps_to_its_document(case: Any, key_headers: dict[str, str]) -> None:
    case.call_and_validate(headers=key_headers, checks=ALL_CHECKS, timeout=60)
