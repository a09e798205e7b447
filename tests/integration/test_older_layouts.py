"""A Django application laid out as older repositories are (18F/tock): a Compose file of
format 1 (services at the top level, ``links``), a Cloud Foundry manifest at the root binding
a database service named ``tockdb``, and one root Dockerfile. Gold: the files this test
writes (line numbers counted in them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from substrate.settings import Settings
from tests.support.repo_tenant import ask, cited, repo_tenant

pytestmark = pytest.mark.integration

COMPOSE = """\
app:
  build: .
  links:
    - db
  environment:
    - DATABASE_URL=postgres://tock_user@db/tock
db:
  image: postgres:9.4
"""
MANIFEST = """\
---
applications:
- name: tock
  buildpack: python_buildpack
  memory: 512M
  services:
  - tockdb
"""


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    files = {"docker-compose.yml": COMPOSE, "manifest-production.yml": MANIFEST,
             "Dockerfile": "FROM python:3.10\n\nCOPY . /tock\n", "requirements.txt": "django\n"}
    with repo_tenant(stack, tmp_path_factory.mktemp("older"), "t-older", files) as name:
        yield name


def test_a_compose_file_of_format_1_is_read(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "What does app depend on?")
    assert body["answer"].startswith("app depends on: db (DEPENDS_ON at postgres://tock_user@db"
                                     "/tock)"), body["answer"]
    assert [r.split("@")[0] for r in cited(body)][:1] == ["docker-compose.yml#L6"]
    image = ask(stack, tenant, "Which image does db run?")
    assert "postgres:9.4" in image["answer"], image["answer"]
    assert cited(image)[0].startswith("docker-compose.yml#L8@")


def test_the_runtime_version_comes_from_the_root_dockerfile(stack: Settings,
                                                           tenant: str) -> None:
    for question, subject in (("Which Python version does tock use?", "tock"),
                              ("What version of Python does app run?", "app")):
        body = ask(stack, tenant, question)
        assert body["route"]["intent"] == "attributes"
        assert body["answer"].startswith(f"{subject}: runs Python 3.10[1]"), body["answer"]
        assert cited(body)[0].startswith("Dockerfile#L1@")


def test_a_bound_service_named_like_a_database_is_one(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "Which database does tock use?")
    assert "tockdb" in body["answer"], body["answer"]
    assert any(r.startswith("manifest-production.yml#L7@") for r in cited(body)), cited(body)
