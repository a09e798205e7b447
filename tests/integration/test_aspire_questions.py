"""Questions to a repository whose only deployment description is a .NET Aspire app host
(the convention of dotnet/eShop: no Compose file, no manifests): its services, their
dependencies and callers are answered from the app host's lines. Gold: the app host of
tests/unit/test_aspire.py, read by hand."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from substrate.settings import Settings
from tests.support.repo_tenant import ask, repo_tenant
from tests.unit.test_aspire import APPHOST, PATH

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    files = {PATH: APPHOST,
             "src/Inventory.Api/Inventory.Api.csproj": "<Project Sdk=\"Microsoft.NET.Sdk.Web\"/>\n",
             "src/storefront/package.json": "{\"name\": \"storefront\"}\n"}
    with repo_tenant(stack, tmp_path_factory.mktemp("aspire"), "t-aspire", files) as name:
        yield name


def test_what_a_project_depends_on_is_read_from_its_references(stack: Settings,
                                                               tenant: str) -> None:
    body = ask(stack, tenant, "What does inventory-api depend on?")
    cited = {c["to"]: c["evidence_ref"] for c in body["citations"]}
    assert set(cited) == {"infra:inventorydb", "infra:messaging"}, body["answer"]
    assert cited["infra:inventorydb"].startswith(f"{PATH}#L13@")  # .WithReference(inventoryDb)
    assert cited["infra:messaging"].startswith(f"{PATH}#L15@")


def test_who_calls_a_service_includes_an_endpoint_passed_in_the_environment(
        stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "Which services call inventory-api?")
    callers = {c["from"]: c["evidence_ref"] for c in body["citations"]}
    assert set(callers) == {"service:shipping-worker", "service:storefront"}, body["answer"]
    assert callers["service:shipping-worker"].startswith(f"{PATH}#L21@")
