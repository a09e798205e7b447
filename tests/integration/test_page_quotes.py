"""A question no graph family answers, best matched by a documentation page, is answered
from the page's sentences closest to it, each cited at its lines (``page_quotes``); a
command block is quoted with the lead-in that announces it. Gold lines read from the files
written here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from substrate.settings import Settings
from tests.support.repo_tenant import ask, repo_tenant

pytestmark = pytest.mark.integration

COMPOSE = """\
services:
  storefront:
    image: example/storefront:1
    environment:
      BASKET_URL: http://basket:8080
  basket:
    image: example/basket:1
"""
README = """\
# Example Shop

Example Shop is a two-service storefront used to try out container platforms.

See docs/development.md to work on it.

## Quickstart

### Docker Compose

This deployment method will run the application on your local machine.

Pre-requisites:

- Docker installed locally

Download the latest Compose file and use it to start every container:

```sh
wget https://github.com/example/shop/releases/latest/download/docker-compose.yml
DB_PASSWORD='<some password>' docker compose --file docker-compose.yml up
```
"""
DEVELOPMENT = """\
# Development guide

This guide explains how to work on Example Shop from a laptop.

## Running the unit tests

Every service has its own tests. Run them all from the repository root with:

```sh
make unit-tests
```

## Tearing the cluster down

When you are finished, remove every workload and volume from the kind cluster:

```sh
kind delete cluster --name example-shop
```
"""


BASKET_README = """\
# basket

Keeps each shopper's basket.

## Running locally

Start the service with Gradle:

```sh
./gradlew bootRun
```
"""
STOREFRONT_README = """\
# storefront

The shop's web front.

## Running locally

Start the service with npm:

```sh
npm start
```
"""


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    files = {"docker-compose.yml": COMPOSE, "README.md": README,
             "docs/development.md": DEVELOPMENT,
             "services/basket/README.md": BASKET_README,
             "services/basket/build.gradle": "plugins { id 'java' }\n",
             "services/storefront/README.md": STOREFRONT_README,
             "services/storefront/package.json": "{}\n"}
    with repo_tenant(stack, tmp_path_factory.mktemp("shop"), "t-pages", files) as name:
        yield name


def test_a_how_to_question_is_answered_from_the_page_with_its_command(
        stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "How do I tear the kind cluster down when I am finished?")
    answer = body["answer"]
    assert answer.startswith('docs/development.md ("Development guide") says: '
                             "Tearing the cluster down: "), answer
    # the lead-in (line 15) and the command of the block under it (line 18)
    assert "kind delete cluster --name example-shop" in answer
    refs = [c["evidence_ref"] for c in body["citations"]]
    assert refs and all(r.startswith("docs/development.md#L") for r in refs), refs
    assert any(r.startswith("docs/development.md#L15-L18@") for r in refs), refs
    # prose found, not a fact of the graph that was asked for: below an ADR's quotes
    assert 0.3 < body["confidence"]["confidence"] < 0.7


def test_the_section_closest_to_the_question_is_quoted(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "How do I run the unit tests?")
    assert "make unit-tests" in body["answer"], body["answer"]
    refs = [c["evidence_ref"] for c in body["citations"]]
    assert any(r.startswith("docs/development.md#L7-L10@") for r in refs), refs


def test_a_question_about_the_whole_application_is_answered_from_the_root_readme(
        stack: Settings, tenant: str) -> None:
    """No service named: the root README's method, whose command comes after its
    prerequisites, answers before a service README whose section holds its command at once
    ("Running locally: Start the service with npm: npm start")."""
    body = ask(stack, tenant, "How do I run the application locally?")
    answer = body["answer"]
    assert answer.startswith('README.md ("Example Shop") says: Docker Compose: '), answer
    assert "docker compose --file docker-compose.yml up" in answer
    refs = [c["evidence_ref"] for c in body["citations"]]
    assert any(r.startswith("README.md#L11@") for r in refs), refs
    assert any(r.startswith("README.md#L17-L21@") for r in refs), refs  # to its last command


def test_a_service_the_question_names_is_answered_from_its_own_readme(
        stack: Settings, tenant: str) -> None:
    """Both service READMEs say how to run them locally; the one named answers (its folder's
    README is a Document named by its path: "# basket" names the service)."""
    body = ask(stack, tenant, "How do I run the basket service locally?")
    answer = body["answer"]
    assert answer.startswith("services/basket/README.md says: Running locally: "), answer
    assert "./gradlew bootRun" in answer and "npm start" not in answer
    refs = [c["evidence_ref"] for c in body["citations"]]
    assert any(r.startswith("services/basket/README.md#L7-L10@") for r in refs), refs


def test_a_service_named_like_its_readme_title_is_still_the_service(
        stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "What does storefront depend on?")
    assert body["route"]["intent"] == "dependency"
    assert body["answer"].startswith("storefront depends on: basket"), body["answer"]
    assert body["citations"][0]["evidence_ref"].startswith("docker-compose.yml#L5@")
