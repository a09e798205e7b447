"""The language of a service no README describes: its build files, its Dockerfile's base."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from substrate.connectors.gitrepo import batch_at, folder_service_name
from substrate.connectors.languages import image_language
from substrate.connectors.path_filter import is_read, is_relevant
from substrate.demo.gitwriter import commit_tree, init_repo


@pytest.mark.parametrize(("image", "language"), [
    ("golang:1.22-alpine", "Go"), ("maven:3.9-eclipse-temurin-21", "Java"),
    ("eclipse-temurin:21-jre", "Java"), ("node:20-slim", "JavaScript"),
    ("python:3.12@sha256:abc", "Python"), ("mcr.microsoft.com/dotnet/sdk:8.0", "C#"),
    ("docker.io/library/ruby:3.3", "Ruby"), ("alpine:3.20", None),
    ("descartesresearch/teastore-base:latest", None),
])
def test_the_language_of_a_base_image(image: str, language: str | None) -> None:
    assert image_language(image) == language


def test_a_java_package_named_folder_stands_for_its_last_part() -> None:
    assert folder_service_name("tools.descartes.teastore.webui") == "webui"
    assert folder_service_name("checkout") == "checkout"
    assert folder_service_name("api.v2") == "api.v2"  # two parts: a name of its own


def test_languages_from_build_files_and_dockerfiles(tmp_path: Path) -> None:
    """A README's statement stays first; a pyproject beats the package.json of a Django
    app's assets; a Compose service's own Dockerfile speaks for it in a shared folder."""
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {
        "services/cart/go.mod": "module cart\n",
        "services/cart/README.md": "# cart\n\nKeeps carts.\n\nLanguage: Rust\n",
        "services/orders/go.mod": "module orders\n",
        "services/billing/pom.xml": "<project/>\n",
        "services/billing/src/main/kotlin/App.kt": "fun main() {}\n",
        "services/web/pyproject.toml": "[project]\nname = 'web'\n",
        "services/web/package.json": "{}\n",
        "services/ui/package.json": "{}\n", "services/ui/tsconfig.json": "{}\n",
        "services/worker/Dockerfile": "FROM python:3.12 AS build\nRUN pip install x\n"
                                      "FROM gcr.io/distroless/python3\n",
        "app/Dockerfile": "FROM python:3.12\n", "app/node.Dockerfile": "FROM node:20\n",
        "app/docker-compose.yml": "services:\n  site:\n    build: .\n  assets:\n    build:\n"
                                  "      context: .\n      dockerfile: node.Dockerfile\n",
    }, "init", "2026-08-03T09:00:00Z")
    nodes = {n.ceid: n.props for n in batch_at(repo).nodes}
    language = {c: nodes[c].get("language") for c in nodes if c.startswith("service:")}
    assert language["service:cart"] == "Rust"  # the README's
    assert language["service:orders"] == "Go"
    assert language["service:billing"] == "Kotlin"
    assert language["service:web"] == "Python"
    assert language["service:ui"] == "TypeScript"
    assert language["service:worker"] == "Python"
    assert language["service:site"] == "Python" and language["service:assets"] == "JavaScript"
    refs = [r for r in nodes["service:orders"]["attribute_refs"] if r.startswith("language|")]
    assert refs and refs[0].startswith("language|Go|services/orders/go.mod#L1@")
    refs = [r for r in nodes["service:worker"]["attribute_refs"] if r.startswith("language|")]
    assert refs[0].startswith("language|Python|services/worker/Dockerfile#L1@")


def test_the_files_deciding_a_language_are_replayed_when_added_or_deleted() -> None:
    assert is_read("services/ui/tsconfig.json") and is_read("src/Api/Api.csproj")
    assert is_read("services/billing/src/main/kotlin/App.kt")
    assert not is_relevant(("M", "backend/billing/src/main/java/App.java"), hits=frozenset())


def test_more_build_files_a_helper_stage_first_and_a_readme_sentence_last(tmp_path: Path
                                                                       ) -> None:
    """OpenTelemetry demo's quote (composer.json; a Dockerfile whose first stage is
    mlocati/php-extension-installer) and currency (CMakeLists.txt on alpine), a Go build
    stage before a distroless runtime, and a README that says "a C++ based service" for a
    folder with nothing else to tell."""
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {
        "services/quote/composer.json": "{}\n",
        "services/quote/Dockerfile": "FROM mlocati/php-extension-installer AS ext\n"
                                     "FROM composer:2.7 AS vendor\nFROM php:8.3-cli\n",
        "services/currency/CMakeLists.txt": "project(currency CXX)\n",
        "services/currency/Dockerfile": "FROM alpine:3.20 AS builder\nRUN apk add g++\n",
        "services/fxrates/Dockerfile": "FROM mlocati/php-extension-installer AS ext\n"
                                       "FROM composer:2.7 AS vendor\nFROM alpine:3.20\n",
        "services/pricing/Dockerfile": "FROM golang:1.22 AS build\n"
                                       "FROM gcr.io/distroless/static\n",
        "services/legacy/README.md": "# legacy\n\nThe legacy service is a C++ based service "
                                     "that nobody builds any more.\n",
        "services/legacy/Dockerfile": "FROM alpine:3.20\n",
        "services/stale/README.md": "# stale\n\nIt is written in Go.\n",
        "services/stale/package.json": "{}\n",
    }, "init", "2026-08-03T09:00:00Z")
    nodes = {n.ceid: n.props for n in batch_at(repo).nodes}
    language = {c: nodes[c].get("language") for c in nodes if c.startswith("service:")}
    assert language["service:quote"] == "PHP"
    assert language["service:currency"] == "C++"
    assert language["service:fxrates"] == "PHP"  # the composer stage, the last of a language
    assert language["service:pricing"] == "Go"
    assert language["service:legacy"] == "C++"
    assert language["service:stale"] == "JavaScript"  # the build file before the README
    refs = [r for r in nodes["service:fxrates"]["attribute_refs"] if r.startswith("language|")]
    assert refs[0].startswith("language|PHP|services/fxrates/Dockerfile#L2@")
    refs = [r for r in nodes["service:legacy"]["attribute_refs"] if r.startswith("language|")]
    assert refs[0].startswith("language|C++|services/legacy/README.md#L3@")


def test_a_module_no_service_claims_has_its_language_and_description(tmp_path: Path) -> None:
    """opg-use-an-lpa's service-admin: a Go tool with a README, deployed by nothing."""
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {
        "docker-compose.yml": "services:\n  web:\n    build: ./web\n",
        "web/Dockerfile": "FROM node:20\n",
        "service-admin/go.mod": "module admin\n",
        "service-admin/README.md": "# Service Admin\n\nThe Service Admin Portal is an "
                                   "internal tool for investigating queries.\n",
    }, "init", "2026-08-03T09:00:00Z")
    modules = {n.props["path"]: n.props for n in batch_at(repo).nodes if n.label == "Module"}
    admin = modules["service-admin"]
    assert admin["language"] == "Go"
    assert admin["description"].startswith("The Service Admin Portal is an internal tool")
    assert any(r.startswith("language|Go|service-admin/go.mod#L1@")
               for r in admin["attribute_refs"])


def test_more_language_markers_are_replayed() -> None:
    assert is_read("src/quote/composer.json") and is_read("src/currency/CMakeLists.txt")
    assert is_read("src/Api/Api.fsproj") and is_read("build.sbt")


def test_a_build_file_is_cited_at_its_first_line_with_text(tmp_path: Path) -> None:
    """ftgo's build.gradle files open with a blank line."""
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {"services/order/build.gradle": "\n\napply plugin: 'java'\n"},
                "init", "2026-08-03T09:00:00Z")
    order = next(n for n in batch_at(repo).nodes if n.ceid == "service:order")
    assert any(r.startswith("language|Java|services/order/build.gradle#L3@")
               for r in order.props["attribute_refs"])


def _versions(repo: Path) -> Callable[[str], tuple[str | None, list[str]]]:
    """A service's ``language_version`` and the refs stating it, in the repository's batch."""
    nodes = {n.ceid: n.props for n in batch_at(repo).nodes}

    def version(ceid: str) -> tuple[str | None, list[str]]:
        props = nodes[ceid]
        return props.get("language_version"), [
            r.rsplit("|", 1)[1] for r in props.get("attribute_refs") or []
            if r.startswith("language_version|")]

    return version


def test_runtime_versions_from_version_files_and_base_image_tags(tmp_path: Path) -> None:
    """A version file in the service's folder first (``.nvmrc``, ``.tool-versions`` naming
    its tool), else its Dockerfile's ``FROM`` tag; a service built from the root (Compose's
    ``build: .``) reads the root's; a tag with no number says nothing."""
    repo = init_repo(tmp_path / "repo")
    short = commit_tree(repo, {
        "docker-compose.yml": ("services:\n  app:\n    build: .\n  web:\n    build: ./web\n"
                               "  api:\n    build: ./api\n  edge:\n    build: ./edge\n"),
        "Dockerfile": "FROM node:20 AS assets\nFROM python:3.10-slim\n",
        "requirements.txt": "django\n",
        "web/package.json": "{}\n", "web/.nvmrc": "v20.11.1\n",
        "web/Dockerfile": "FROM node:18-alpine\n",
        "api/go.mod": "module api\n", "api/.tool-versions": "nodejs 20.1.0\ngolang 1.22.3\n",
        "edge/go.mod": "module edge\n", "edge/Dockerfile": "FROM golang:latest\n",
    }, "init", "2026-01-05T09:00:00Z")[:7]
    version = _versions(repo)

    assert version("service:app") == ("Python 3.10", [f"Dockerfile#L2@{short}"])
    assert version("service:web") == ("Node.js 20.11.1", [f"web/.nvmrc#L1@{short}"])
    assert version("service:api") == ("Go 1.22.3", [f"api/.tool-versions#L2@{short}"])
    assert version("service:edge") == (None, [])


@pytest.mark.parametrize(("path", "read"), [
    (".python-version", True), ("svc/runtime.txt", True), ("web/.nvmrc", True),
    (".tool-versions", True), ("api/Pipfile", True), ("web/notes.txt", False)])
def test_version_files_are_read_by_a_replay(path: str, read: bool) -> None:
    assert is_read(path) is read


def test_runtime_versions_from_build_files(tmp_path: Path) -> None:
    """With no version file and no numbered base image: the version the build is made for.
    A Maven module inherits ``<java.version>`` from the parent folder's pom.xml
    (spring-petclinic-microservices); go.mod's ``go`` directive; package.json's
    ``engines.node``; pyproject's ``requires-python``; a version file still comes first."""
    repo = init_repo(tmp_path / "repo")
    short = commit_tree(repo, {
        "docker-compose.yml": ("services:\n  customers:\n    build: ./customers\n"
                               "  dispatch:\n    build: ./dispatch\n  web:\n    build: ./web\n"
                               "  api:\n    build: ./api\n  worker:\n    build: ./worker\n"),
        "pom.xml": ("<project>\n  <properties>\n    <java.version>17</java.version>\n"
                    "  </properties>\n</project>\n"),
        "customers/pom.xml": "<project>\n  <artifactId>customers</artifactId>\n</project>\n",
        "dispatch/go.mod": "module dispatch\n\ngo 1.14\n",
        "web/package.json": '{\n  "name": "web",\n  "engines": {"node": ">=18"}\n}\n',
        "api/pyproject.toml": '[project]\nname = "api"\nrequires-python = ">=3.10"\n',
        "worker/pyproject.toml": '[project]\nrequires-python = ">=3.9"\n',
        "worker/.python-version": "3.12.1\n",
    }, "init", "2026-01-05T09:00:00Z")[:7]
    version = _versions(repo)

    assert version("service:customers") == ("Java 17", [f"pom.xml#L3@{short}"])
    assert version("service:dispatch") == ("Go 1.14", [f"dispatch/go.mod#L3@{short}"])
    assert version("service:web") == ("Node.js >=18", [f"web/package.json#L3@{short}"])
    assert version("service:api") == ("Python >=3.10", [f"api/pyproject.toml#L3@{short}"])
    assert version("service:worker") == ("Python 3.12.1", [f"worker/.python-version#L1@{short}"])


def test_dotnet_versions_and_clients_from_project_files(tmp_path: Path) -> None:
    """A .NET project's ``<TargetFramework>`` is its runtime's version, else a
    ``Directory.Build.props`` above it; the clients of the projects it references are its own
    (an event bus library holding the RabbitMQ client), each cited where declared."""
    repo = init_repo(tmp_path / "repo")
    short = commit_tree(repo, {
        "docker-compose.yml": ("services:\n  basket-api:\n    build: ./src/Basket.API\n"
                               "  worker:\n    build: ./src/Worker\n"),
        "Directory.Build.props": ("<Project>\n  <PropertyGroup>\n"
                                  "    <TargetFramework>net8.0</TargetFramework>\n"
                                  "  </PropertyGroup>\n</Project>\n"),
        "src/Basket.API/Basket.API.csproj": (
            '<Project Sdk="Microsoft.NET.Sdk.Web">\n  <PropertyGroup>\n'
            "    <TargetFramework>net9.0</TargetFramework>\n  </PropertyGroup>\n"
            '  <ItemGroup>\n    <PackageReference Include="Aspire.StackExchange.Redis" />\n'
            '    <ProjectReference Include="..\\EventBus\\EventBus.csproj" />\n'
            "  </ItemGroup>\n</Project>\n"),
        "src/EventBus/EventBus.csproj": (
            '<Project Sdk="Microsoft.NET.Sdk">\n  <ItemGroup>\n'
            '    <PackageReference Include="RabbitMQ.Client" />\n'
            '    <ProjectReference Include="..\\Basket.API\\Basket.API.csproj" />\n'
            "  </ItemGroup>\n</Project>\n"),
        "src/Worker/Worker.csproj": ('<Project Sdk="Microsoft.NET.Sdk.Worker">\n'
                                     "</Project>\n"),
    }, "init", "2026-01-05T09:00:00Z")[:7]
    version = _versions(repo)
    nodes = {n.ceid: n.props for n in batch_at(repo).nodes}

    assert version("service:basket-api") == (
        ".NET 9.0", [f"src/Basket.API/Basket.API.csproj#L3@{short}"])
    assert version("service:worker") == (".NET 8.0", [f"Directory.Build.props#L3@{short}"])
    basket = nodes["service:basket-api"]
    assert basket["data_clients"] == ["RabbitMQ", "Redis"]
    assert basket["frameworks"] == ["ASP.NET Core"]
    assert f"data_clients|RabbitMQ|src/EventBus/EventBus.csproj#L3@{short}" \
        in basket["attribute_refs"]
    assert nodes["service:worker"]["frameworks"] == [".NET Worker Service"]
