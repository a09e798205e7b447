"""The language of a service no README describes: its build files, its Dockerfile's base."""

from __future__ import annotations

from pathlib import Path

import pytest

from substrate.connectors.gitrepo import batch_at, folder_service_name
from substrate.connectors.languages import image_language
from substrate.connectors.path_filter import is_read
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
    assert not is_read("backend/billing/src/main/java/App.java")
