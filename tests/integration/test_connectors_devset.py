"""Connector conventions on the devset repositories (issue 8, Build 1) and on small fixture repos.

Each devset bundle is cloned and its HEAD ingested into a tenant of its own; expected values
were read from the repositories (``git show``), never from the product:

* bank-of-anthos: services under ``src/<group>/<name>`` owned by the catch-all CODEOWNERS rule
  (``.github/CODEOWNERS`` line 6), addresses read through ``envFrom``/``configMapKeyRef`` from
  ``kubernetes-manifests/config.yaml`` and ``accounts-db.yaml``/``ledger-db.yaml`` ConfigMaps;
* retail-store-sample-app: ``src/app/docker-compose.yml`` includes one compose file per service,
  ``compose.override.yaml`` and the tracing overlay add the calls; Helm ``templates/`` are not
  entities;
* fac: a path-scoped CODEOWNERS that covers no service: the paths its rules name are owned
  ``Module`` nodes ("who owns the production Terraform?"); PostgREST (``api``) is no database;
* manage.get.gov: the catch-all ``* @abroddrick`` owns the compose services under ``src/`` and
  the Python packages (``src/registrar``), ``docs/*`` the docs folder;
* bank-of-anthos: a database's ConfigMap environment (``POSTGRES_DB``) is its own attribute.

OWNERS files, YAML ownership maps and Backstage descriptors, which the devset lacks, are
checked on a repository built here, through the graph and ``/ownership/{service}``.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from substrate.connectors.git_ingest import ingest_git
from substrate.demo.gitwriter import commit_tree, init_repo
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from tests.support import devset
from tests.support.gateway_client import gateway
from tests.support.graphstate import drop_tenant_graph, new_tenant

pytestmark = pytest.mark.integration

REPOS = ("bank-of-anthos", "retail-store-sample-app", "fac", "manage.get.gov")
_REF = re.compile(r"^(?P<path>[^#]+)#L(?P<line>\d+)@(?P<commit>[0-9a-f]{7,40})$")

EDGES = (
    "MATCH (a {tenant_id: $t})-[r]->(b {tenant_id: $t}) WHERE r.valid_to_v IS NULL "
    "RETURN a.ceid AS src, type(r) AS type, b.ceid AS dst, properties(r) AS p"
)
NODES = (
    "MATCH (n:Entity {tenant_id: $t}) WHERE n.valid_to_v IS NULL "
    "RETURN n.ceid AS ceid, labels(n) AS labels, properties(n) AS p"
)


def _ingest(stack: Settings, driver: Driver, repo: Path, tenant: str) -> None:
    ingest_git(GraphWriter(stack, driver, embedder=None), repo, tenant=tenant,
               progress=lambda _m: None)


@pytest.fixture(scope="module")
def graphs(stack: Settings, driver: Driver, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[dict[str, tuple[Path, str]]]:
    """``repo name -> (clone, tenant)`` with each clone's HEAD ingested."""
    root = tmp_path_factory.mktemp("devset")
    out: dict[str, tuple[Path, str]] = {}
    for name in REPOS:
        path = devset.clone(name, root)
        tenant = new_tenant(f"conn-{name.split('.')[0][:10]}")
        _ingest(stack, driver, path, tenant)
        out[name] = (path, tenant)
    yield out
    for _, tenant in out.values():
        drop_tenant_graph(driver, tenant)


def edges(driver: Driver, tenant: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    rows, _, _ = driver.execute_query(EDGES, t=tenant)
    return {(r["src"], r["type"], r["dst"]): dict(r["p"]) for r in rows}


def nodes(driver: Driver, tenant: str) -> dict[str, dict[str, Any]]:
    rows, _, _ = driver.execute_query(NODES, t=tenant)
    return {r["ceid"]: {**dict(r["p"]), "_labels": r["labels"]} for r in rows}


def line_of(repo: Path, ref: str) -> str:
    """The text of the line an evidence ref names, read from the clone."""
    match = _REF.match(ref)
    assert match, ref
    text = subprocess.run(["git", "show", f"{match['commit']}:{match['path']}"], cwd=repo,
                          capture_output=True, text=True, check=True).stdout
    return text.splitlines()[int(match["line"]) - 1]


def owners_of(found: dict[tuple[str, str, str], dict[str, Any]], service: str,
              kind: str = "OWNS") -> dict[str, dict[str, Any]]:
    return {src: p for (src, t, dst), p in found.items() if t == kind and dst == service}


# --- bank-of-anthos -----------------------------------------------------------------------

BOA_FOLDERS = {
    "service:frontend": "src/frontend/",
    "service:balancereader": "src/ledger/balancereader/",
    "service:ledgerwriter": "src/ledger/ledgerwriter/",
    "service:transactionhistory": "src/ledger/transactionhistory/",
    "service:userservice": "src/accounts/userservice/",
    "service:contacts": "src/accounts/contacts/",
    "service:loadgenerator": "src/loadgenerator/",
}


def test_boa_services_under_src_group_name_owned_by_the_catch_all(
    driver: Driver, graphs: dict[str, tuple[Path, str]]
) -> None:
    repo, tenant = graphs["bank-of-anthos"]
    found, entities = edges(driver, tenant), nodes(driver, tenant)
    for service, folder in BOA_FOLDERS.items():
        assert entities[service]["path"] == folder, service
        owners = owners_of(found, service)
        assert set(owners) == {"team:devrel-flagship-app-maintainers", "dev:yoshi-approver"}
        for props in owners.values():
            ref = props["evidence_ref"]
            assert ref.startswith(".github/CODEOWNERS#L6@"), ref
            assert line_of(repo, ref) == (
                "* @GoogleCloudPlatform/devrel-flagship-app-maintainers @yoshi-approver")
        primary = owners_of(found, service, "PRIMARY_OWNER")
        assert list(primary) == ["team:devrel-flagship-app-maintainers"]


def test_boa_configmap_addresses_on_edges(driver: Driver,
                                          graphs: dict[str, tuple[Path, str]]) -> None:
    repo, tenant = graphs["bank-of-anthos"]
    found = edges(driver, tenant)
    expected = {  # (src, type, dst): (address, port, text of the ConfigMap line)
        ("service:frontend", "CALLS", "service:balancereader"):
            ("balancereader:8080", 8080, 'BALANCES_API_ADDR: "balancereader:8080"'),
        ("service:frontend", "CALLS", "service:userservice"):
            ("userservice:8080", 8080, 'USERSERVICE_API_ADDR: "userservice:8080"'),
        ("service:frontend", "CALLS", "service:transactionhistory"):
            ("transactionhistory:8080", 8080, 'HISTORY_API_ADDR: "transactionhistory:8080"'),
        ("service:ledgerwriter", "DEPENDS_ON", "infra:ledger-db"):
            ("jdbc:postgresql://ledger-db:5432/postgresdb", 5432,
             "SPRING_DATASOURCE_URL: jdbc:postgresql://ledger-db:5432/postgresdb"),
        ("service:userservice", "DEPENDS_ON", "infra:accounts-db"):
            ("postgresql://accounts-admin:***@accounts-db:5432/accounts-db", 5432,
             "ACCOUNTS_DB_URI: postgresql://accounts-admin:accounts-pwd@accounts-db:5432/"
             "accounts-db"),
    }
    for key, (address, port, text) in expected.items():
        props = found[key]
        assert (props["address"], props["port"], props["via"]) == (address, port, "configmap")
        assert props["evidence_ref"].startswith("kubernetes-manifests/"), props["evidence_ref"]
        assert line_of(repo, props["evidence_ref"]).strip() == text
        assert any("envFrom" in line_of(repo, r) or "name: " in line_of(repo, r)
                   for r in props["evidence_refs"][1:])
    assert found[("service:loadgenerator", "CALLS", "service:frontend")]["address"] == \
        "frontend:80"
    entities = nodes(driver, tenant)
    assert entities["infra:ledger-db"]["kind"] == "database"  # listens on 5432
    assert ("service:balancereader", "CALLS", "service:frontend") not in found


# --- retail-store-sample-app ------------------------------------------------------------


def test_retail_compose_include_overlays_and_rendered_charts(
    driver: Driver, graphs: dict[str, tuple[Path, str]]
) -> None:
    repo, tenant = graphs["retail-store-sample-app"]
    found, entities = edges(driver, tenant), nodes(driver, tenant)
    services = {c for c, p in entities.items() if "Service" in p["_labels"]}
    assert services == {"service:ui", "service:catalog", "service:cart", "service:checkout",
                        "service:orders", "service:otel-collector", "service:jaeger"}
    infra = {c for c, p in entities.items() if "Infrastructure" in p["_labels"]
             and p.get("kind") != "namespace"}
    assert infra == {"infra:catalog-db", "infra:opensearch", "infra:carts-db",
                     "infra:checkout-redis", "infra:orders-db", "infra:rabbitmq",
                     # the AWS ones of terraform/lib/dependencies (tests/integration/
                     # test_terraform.py checks them)
                     "infra:catalog-rds", "infra:orders-rds", "infra:dynamodb-carts",
                     "infra:checkout-elasticache-redis", "infra:mq",
                     "infra:catalog-opensearch"}
    # the charts are rendered, not read as text: no placeholder reaches the graph, and each
    # chart's workload is the service Compose names, its port cited at the template's line
    assert not any("{{" in str(p) for p in entities.values())
    cart = entities["service:cart"]
    assert "src/cart/chart/templates/deployment.yaml" in cart["manifests"]
    # (cited where the line was written: the chart's template before it moved to src/cart/)
    (port_ref,) = [r.split("|", 2)[2] for r in cart["attribute_refs"]
                   if r.startswith("port|8080|")]
    assert port_ref.split("#")[0].endswith("/templates/deployment.yaml"), port_ref
    assert line_of(repo, port_ref).strip() == "containerPort: 8080"
    for name in ("ui", "catalog", "cart", "checkout", "orders"):
        assert entities[f"service:{name}"]["path"] == f"src/{name}/"  # compose build context
    calls = {  # the overlay compose.override.yaml of the including project
        ("service:ui", "service:orders"): ("http://orders:8080", "RETAIL_UI_ENDPOINTS_ORDERS"),
        ("service:ui", "service:catalog"): ("http://catalog:8080", "RETAIL_UI_ENDPOINTS_CATALOG"),
        ("service:checkout", "service:orders"):
            ("http://orders:8080", "RETAIL_CHECKOUT_ENDPOINTS_ORDERS"),
    }
    for (src, dst), (address, var) in calls.items():
        props = found[(src, "CALLS", dst)]
        assert props["address"] == address and props["port"] == 8080
        assert props["evidence_ref"].startswith("src/app/compose.override.yaml#L")
        assert line_of(repo, props["evidence_ref"]).strip() == f"- {var}={address}"
    tracing = found[("service:orders", "CALLS", "service:otel-collector")]
    assert tracing["evidence_ref"].startswith("src/app/docker-compose.tracing.yml#L")
    broker = found[("service:orders", "DEPENDS_ON", "infra:rabbitmq")]
    assert (broker["address"], broker["port"]) == ("rabbitmq:5672", 5672)
    db = found[("service:orders", "DEPENDS_ON", "infra:orders-db")]
    assert line_of(repo, db["evidence_ref"]).strip() == \
        "- RETAIL_ORDERS_PERSISTENCE_ENDPOINT=orders-db:5432"
    assert not [k for k in found if k[1] in ("OWNS", "PRIMARY_OWNER")]  # no CODEOWNERS


# --- fac and manage.get.gov -------------------------------------------------------------


def test_fac_path_scoped_codeowners_owns_no_service(
    driver: Driver, graphs: dict[str, tuple[Path, str]]
) -> None:
    _, tenant = graphs["fac"]
    found, entities = edges(driver, tenant), nodes(driver, tenant)
    assert entities["service:web"]["path"] == "backend/"
    assert "Service" in entities["service:api"]["_labels"]  # postgrest is not postgres
    assert not [k for k in found if k[1] in ("OWNS", "PRIMARY_OWNER")
                and k[2].startswith("service:")]
    # what the rules own besides folders: the stores the Terraform files under them create
    # (fac-db in terraform/shared/modules/env/env.tf, under the rule of line 20)
    owned = {k[2] for k in found if k[1] == "OWNS" and not k[2].startswith("module:")}
    assert owned and all(entities[c]["kind"] in ("database", "storage") for c in owned), owned
    rule = found[("team:fac-admins", "OWNS", "infra:fac-db")]
    assert rule["pattern"] == "/terraform/shared/modules/"
    api = found[("service:web", "CALLS", "service:api")]
    assert (api["address"], api["port"]) == ("http://api:3000", 3000)


FAC_RULE_PATHS = {  # .github/CODEOWNERS at HEAD: the paths its rules name (none a service's)
    "module:backend-manifests": ("/backend/manifests/", "backend/manifests"),
    "module:github-workflows": ("/.github/workflows/", ".github/workflows"),
    "module:terraform-production": ("/terraform/production/", "terraform/production"),
    "module:terraform-shared-modules": ("/terraform/shared/modules/", "terraform/shared/modules"),
    "module:backend-config-staffusers-json": ("/backend/config/staffusers.json",
                                              "backend/config/staffusers.json"),
}


def test_fac_rule_paths_are_owned_modules(
    stack: Settings, driver: Driver, graphs: dict[str, tuple[Path, str]]
) -> None:
    repo, tenant = graphs["fac"]
    found, entities = edges(driver, tenant), nodes(driver, tenant)
    for module, (pattern, path) in FAC_RULE_PATHS.items():
        assert "Module" in entities[module]["_labels"], module
        assert (entities[module]["name"], entities[module]["path"]) == (pattern, path)
        owners = owners_of(found, module)
        assert list(owners) == ["team:fac-admins"], module
        assert line_of(repo, owners["team:fac-admins"]["evidence_ref"]) == \
            f"{pattern} @GSA-TTS/FAC-admins"
        assert ("PART_OF" in {t for (src, t, _) in found if src == module})
    app = entities["module:backend-dissemination"]  # a Django app no rule covers (README)
    assert (app["path"], app["via"]) == ("backend/dissemination", "python package")
    assert not owners_of(found, "module:backend-dissemination")
    assert "module:backend-audit" not in entities  # no README, empty __init__.py, no rule
    with gateway(stack, headers={"X-Tenant": tenant}, timeout=60) as api:
        body = api.post("/search", json={"query": "Who owns the production Terraform?"}).json()
        assert "@GSA-TTS/FAC-admins" in body["answer"], body["answer"]
        refs = [c["evidence_ref"] for c in body["citations"]]
        assert any(line_of(repo, r) == "/terraform/production/ @GSA-TTS/FAC-admins"
                   for r in refs), refs
        web = api.post("/search", json={"query": "Who owns the web service?"}).json()
        assert web["answer"].startswith("No owner is recorded for web"), web["answer"]
        assert "FAC-admins" not in web["answer"]
        assert any("@GSA-TTS/FAC-admins" in line_of(repo, c["evidence_ref"])  # rules checked
                   for c in web["citations"])


def test_mgg_catch_all_owns_compose_services(
    stack: Settings, driver: Driver, graphs: dict[str, tuple[Path, str]]
) -> None:
    repo, tenant = graphs["manage.get.gov"]
    found = edges(driver, tenant)
    owners = owners_of(found, "service:app")
    assert list(owners) == ["dev:abroddrick"]
    assert line_of(repo, owners["dev:abroddrick"]["evidence_ref"]) == "* @abroddrick"
    with gateway(stack, headers={"X-Tenant": tenant}) as api:
        body = api.get("/ownership/app").json()
    assert [o["ceid"] for o in body["owners"]] == ["dev:abroddrick"]


def test_mgg_python_packages_and_docs_rule(
    stack: Settings, driver: Driver, graphs: dict[str, tuple[Path, str]]
) -> None:
    repo, tenant = graphs["manage.get.gov"]
    found, entities = edges(driver, tenant), nodes(driver, tenant)
    for package in ("registrar", "epplibwrapper", "djangooidc"):
        module = f"module:src-{package}"
        assert entities[module]["path"] == f"src/{package}"
        owners = owners_of(found, module)
        assert list(owners) == ["dev:abroddrick"]  # the catch-all, not docs/*
        assert line_of(repo, owners["dev:abroddrick"]["evidence_ref"]) == "* @abroddrick"
    docs = owners_of(found, "module:docs")
    assert list(docs) == ["team:dotgov"]
    assert line_of(repo, docs["team:dotgov"]["evidence_ref"]) == "docs/* @cisagov/dotgov"
    with gateway(stack, headers={"X-Tenant": tenant}, timeout=60) as api:
        for question, want, not_said in (
                ("Who owns the registrar app?", "@abroddrick", "dotgov"),
                ("Who owns epplibwrapper?", "@abroddrick", "dotgov"),
                ("Who owns the documentation?", "@cisagov/dotgov", "abroddrick")):
            answer = api.post("/search", json={"query": question}).json()["answer"]
            assert want in answer and not_said not in answer, (question, answer)


def test_boa_configmap_environment_is_the_databases_own(
    stack: Settings, driver: Driver, graphs: dict[str, tuple[Path, str]]
) -> None:
    repo, tenant = graphs["bank-of-anthos"]
    db = nodes(driver, tenant)["infra:accounts-db"]
    assert "POSTGRES_DB=accounts-db" in db["env"]  # envFrom: configMapRef accounts-db-config
    assert "POSTGRES_PASSWORD=***" in db["env"]
    refs = [r.split("|")[2] for r in db["attribute_refs"] if r.startswith("env|POSTGRES_DB|")]
    assert any(line_of(repo, r).strip() == "POSTGRES_DB: accounts-db" for r in refs), refs
    with gateway(stack, headers={"X-Tenant": tenant}, timeout=60) as api:
        body = api.post("/search", json={
            "query": "Which database name does accounts-db serve?"}).json()
    assert "accounts-db" in body["answer"] and not body["answer"].startswith("No "), body["answer"]
    assert any(line_of(repo, c["evidence_ref"]).strip() == "POSTGRES_DB: accounts-db"
               for c in body["citations"])


def test_ownership_endpoint_on_bank_of_anthos(
    stack: Settings, graphs: dict[str, tuple[Path, str]]
) -> None:
    _, tenant = graphs["bank-of-anthos"]
    with gateway(stack, headers={"X-Tenant": tenant}) as api:
        r = api.get("/ownership/balancereader")
        assert r.status_code == 200, r.text
        owners = {o["ceid"] for o in r.json()["owners"]}
        assert owners == {"team:devrel-flagship-app-maintainers", "dev:yoshi-approver"}
        answer = api.post("/search", json={"query": "Who owns balancereader?"})
        assert answer.status_code == 200, answer.text
        assert "devrel-flagship-app-maintainers" in answer.text
        assert api.get("/ownership/no-such-service").status_code == 404


# --- conventions the devset lacks: a repository built here -------------------------------

FIXTURE = {
    "OWNERS": "approvers:\n  - alice\nreviewers:\n  - bob\n",
    "services-src/ledger/OWNERS": "set noparent\ncarol@example.com\n",
    ".github/owners.yml": "components:\n  - name: search\n    team: discovery\n",
    "catalog/checkout/catalog-info.yaml": (
        "apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata:\n  name: checkout\n"
        "spec:\n  type: service\n  owner: group:default/payments\n  dependsOn:\n"
        "    - component:ledger\n"),
    "catalog/checkout/app.py": "print()\n",
    "deploy/compose.yaml": (
        "services:\n  ledger:\n    build: ../services-src/ledger\n"
        "  search:\n    build: ../services-src/search\n"),
    "services-src/ledger/Dockerfile": "FROM scratch\n",
    "services-src/search/Dockerfile": "FROM scratch\n",
}


@pytest.fixture(scope="module")
def fixture_tenant(stack: Settings, driver: Driver, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[tuple[Path, str]]:
    repo = init_repo(tmp_path_factory.mktemp("owners") / "repo")
    commit_tree(repo, FIXTURE, "init", "2026-08-03T09:00:00Z")
    tenant = new_tenant("conn-owners")
    _ingest(stack, driver, repo, tenant)
    yield repo, tenant
    drop_tenant_graph(driver, tenant)


def test_owners_files_maps_and_catalog_through_the_api(
    stack: Settings, driver: Driver, fixture_tenant: tuple[Path, str]
) -> None:
    repo, tenant = fixture_tenant
    found = edges(driver, tenant)
    assert set(owners_of(found, "service:ledger")) == {"dev:carol"}  # set noparent
    assert set(owners_of(found, "service:search")) == {"team:discovery", "dev:alice"}
    assert set(owners_of(found, "service:checkout", "PRIMARY_OWNER")) == {"team:payments"}
    assert ("service:checkout", "DEPENDS_ON", "service:ledger") in found
    expected = {"ledger": {"dev:carol"}, "search": {"team:discovery", "dev:alice"},
                "checkout": {"team:payments", "dev:alice"}}
    with gateway(stack, headers={"X-Tenant": tenant}) as api:
        for service, owners in expected.items():
            body = api.get(f"/ownership/{service}").json()
            assert {o["ceid"] for o in body["owners"]} == owners, body
    for (_, kind, _), props in found.items():
        if kind in ("OWNS", "PRIMARY_OWNER"):
            assert line_of(repo, props["evidence_ref"]).strip()  # a real, non-empty line
