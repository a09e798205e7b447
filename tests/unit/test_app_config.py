"""A Spring Boot service's own ``application.yml`` names its peers (spring-petclinic-
microservices: the gateway's ``lb://`` routes, the config server it imports), and Maven module
folders named ``<project>-<service>`` are the services' source folders."""

from __future__ import annotations

from pathlib import Path

from substrate.connectors.gitrepo import batch_at
from substrate.connectors.layout import _without_shared_prefix
from substrate.connectors.path_filter import is_read, is_relevant
from substrate.demo.gitwriter import commit_tree, init_repo

COMPOSE = """\
services:
  config-server:
    image: springcommunity/spring-petclinic-config-server
  api-gateway:
    image: springcommunity/spring-petclinic-api-gateway
    depends_on:
      - config-server
  customers-service:
    image: springcommunity/spring-petclinic-customers-service
  vets-service:
    image: springcommunity/spring-petclinic-vets-service
"""

GATEWAY = """\
spring:
  application:
    name: api-gateway
  config:
    import: optional:configserver:${CONFIG_SERVER_URL:http://localhost:8888/}
  cloud:
    gateway:
      routes:
        - id: vets-service
          uri: lb://vets-service
        - id: customers-service
          uri: lb://customers-service
---
spring:
  config:
    activate:
      on-profile: docker
    import: configserver:http://config-server:8888
"""

POM = "<project><artifactId>{name}</artifactId></project>\n"


def test_module_folders_answer_to_their_name_without_the_project_prefix() -> None:
    folders = ["spring-petclinic-api-gateway", "spring-petclinic-customers-service",
               "spring-petclinic-vets-service", "docker"]
    assert _without_shared_prefix(folders) == {
        "spring-petclinic-api-gateway": "api-gateway",
        "spring-petclinic-customers-service": "customers-service",
        "spring-petclinic-vets-service": "vets-service"}
    # two names sharing a word are not a project prefix; nor one folder's whole name
    assert _without_shared_prefix(["src/ledger-db", "src/ledger-writer"]) == {}
    assert _without_shared_prefix(["a-b", "a-c", "a"]) == {}


def test_routes_and_config_server_of_a_spring_service_are_its_dependencies(
        tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    files = {"docker-compose.yml": COMPOSE, "docker/Dockerfile": "FROM eclipse-temurin\n"}
    for name in ("config-server", "api-gateway", "customers-service", "vets-service"):
        files[f"spring-petclinic-{name}/pom.xml"] = POM.format(name=name)
    files["spring-petclinic-api-gateway/src/main/resources/application.yml"] = GATEWAY
    sha = commit_tree(repo, files, "init", "2026-08-03T09:00:00Z")[:7]
    batch = batch_at(repo)
    paths = {n.ceid: n.props.get("path") for n in batch.nodes}
    assert paths["service:api-gateway"] == "spring-petclinic-api-gateway/"
    config = "spring-petclinic-api-gateway/src/main/resources/application.yml"
    found = {(e.type, e.dst, e.evidence_ref) for e in batch.edges
             if e.src == "service:api-gateway" and (e.props or {}).get("via") == "app_config"}
    assert found == {
        ("CALLS", "service:vets-service", f"{config}#L10@{sha}"),
        ("CALLS", "service:customers-service", f"{config}#L12@{sha}"),
        ("CALLS", "service:config-server", f"{config}#L18@{sha}"),
    }  # the placeholder's default (localhost) names no peer
    assert is_read(config) and not is_relevant(
        ("M", "spring-petclinic-api-gateway/src/main/java/A.java"), hits=frozenset())


def test_a_dotnet_gateway_built_from_a_shared_context_reads_its_appsettings(
        tmp_path: Path) -> None:
    """eShopOnContainers' shape: every service is built from ``context: .`` (the ``src``
    folder) with its own ``dockerfile:``, so its source folder is the Dockerfile's; the YARP
    gateway's ``appsettings.json`` names the clusters it routes to (``"Address"``)."""
    compose = ("services:\n  catalog-api:\n    image: shop/catalog\n    build:\n"
               "      context: .\n      dockerfile: Services/Catalog/Dockerfile\n"
               "  apigw:\n    image: shop/apigw\n    build:\n      context: .\n"
               "      dockerfile: Gateways/Yarp/Dockerfile\n")
    settings = ('{\n  // YARP\n  "ReverseProxy": {\n    "Clusters": {\n      "catalog": {\n'
                '        "Destinations": {\n          "d1": {\n'
                '            "Address": "http://catalog-api/"\n          }\n        }\n'
                '      }\n    }\n  }\n}\n')
    repo = init_repo(tmp_path / "repo")
    sha = commit_tree(repo, {
        "src/docker-compose.yml": compose,
        "src/Services/Catalog/Dockerfile": "FROM mcr.microsoft.com/dotnet/aspnet:8.0\n",
        "src/Gateways/Yarp/Dockerfile": "FROM mcr.microsoft.com/dotnet/aspnet:8.0\n",
        "src/Gateways/Yarp/appsettings.json": settings,
        "src/Gateways/Yarp/appsettings.Development.json": '{"Urls": "http://localhost:5202"}\n',
    }, "init", "2026-08-03T09:00:00Z")[:7]
    batch = batch_at(repo)
    paths = {n.ceid: n.props.get("path") for n in batch.nodes if n.label == "Service"}
    assert paths == {"service:apigw": "src/Gateways/Yarp/",
                     "service:catalog-api": "src/Services/Catalog/"}
    calls = [(e.src, e.dst, e.evidence_ref, e.props["via"]) for e in batch.edges
             if e.type == "CALLS"]
    assert calls == [("service:apigw", "service:catalog-api",
                      f"src/Gateways/Yarp/appsettings.json#L8@{sha}", "app_config")]
    assert is_read("src/Gateways/Yarp/appsettings.Production.json")


def test_a_config_server_serves_each_application_the_files_named_after_it(
        tmp_path: Path) -> None:
    """piggymetrics' shape: the config server's native backend (``shared/<application>.yml``)
    holds the gateway's Zuul routes and each service's peers; the shared ``application.yml``
    every application gets is not read as any one's."""
    compose = "".join(f"  {name}:\n    image: sqshq/piggymetrics-{name}\n"
                      for name in ("config", "gateway", "auth-service", "account-service"))
    gateway = ("zuul:\n  routes:\n    auth-service:\n      path: /uaa/**\n"
               "      url: http://auth-service:5000\n    account-service:\n"
               "      path: /accounts/**\n      serviceId: account-service\n")
    repo = init_repo(tmp_path / "repo")
    files = {"docker-compose.yml": "services:\n" + compose,
             "config/src/main/resources/shared/gateway.yml": gateway,
             "config/src/main/resources/shared/gateway-docker.yml": "x:\n  y: 1\n",
             "config/src/main/resources/shared/application.yml":
                 "eureka:\n  client:\n    serviceUrl:\n      defaultZone: http://config:8761/\n"}
    for name in ("config", "gateway", "auth-service", "account-service"):
        files[f"{name}/pom.xml"] = POM.format(name=name)
    sha = commit_tree(repo, files, "init", "2026-08-03T09:00:00Z")[:7]
    served = "config/src/main/resources/shared/gateway.yml"
    calls = {(e.src, e.dst, e.evidence_ref) for e in batch_at(repo).edges
             if e.props.get("via") == "app_config"}
    assert calls == {("service:gateway", "service:auth-service", f"{served}#L5@{sha}"),
                     ("service:gateway", "service:account-service", f"{served}#L8@{sha}")}
    assert is_read(served)
