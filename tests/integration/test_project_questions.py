"""Questions that name the project by its README's title ("What is Sock Shop?"): the
Repository answers to the title (and to its name before a tagline), so its root README is
read first, and alone when the question asks what it is, though a Kubernetes namespace of the
same name hosts every service (whose graph neighbours fill the fused order) and a
documentation page says "Sock Shop" more often. Shaped like microservices-demo/
microservices-demo's layout; gold lines read from the files written here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from substrate.settings import Settings
from tests.support.repo_tenant import ask, repo_tenant

pytestmark = pytest.mark.integration

README = """\
# Sock Shop : A Microservice Demo Application

> **Note:** this repository moved from an older organisation; update your remotes.

The application is the user-facing part of an online shop that sells socks. It is intended
to aid the demonstration and testing of microservice and cloud native technologies.

## Screenshot

![Sock Shop frontend](https://example.com/sockshop-frontend.png)
"""
COMPOSE_DOC = """\
---
layout: default
---

## Sock Shop via Docker Compose

The Sock Shop application is packaged using a Docker Compose file.

### Provision infrastructure

<!-- deploy-doc-start create-infrastructure -->

    docker-compose -f deploy/docker-compose/docker-compose.yml up -d

<!-- deploy-doc-end -->
"""
NAMESPACE = """\
apiVersion: v1
kind: Namespace
metadata:
  name: sock-shop
"""


def deployment(name: str) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: sock-shop
spec:
  selector:
    matchLabels:
      name: {name}
  template:
    metadata:
      labels:
        name: {name}
    spec:
      containers:
      - name: {name}
        image: weaveworksdemos/{name}:0.4.8
        ports:
        - containerPort: 80
"""


SERVICES = ("carts", "catalogue", "orders", "payment", "shipping", "user", "front-end",
            "queue-master")


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    files = {"README.md": README, "docs/deployment/docker-compose.md": COMPOSE_DOC,
             "deploy/kubernetes/manifests/00-sock-shop-ns.yaml": NAMESPACE,
             **{f"deploy/kubernetes/manifests/{s}-dep.yaml": deployment(s) for s in SERVICES}}
    with repo_tenant(stack, tmp_path_factory.mktemp("sock"), "t-project", files) as name:
        yield name


def test_what_the_project_is_comes_from_its_root_readme(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "What is Sock Shop?")
    answer = body["answer"]
    # the opening paragraph, past the notice in a blockquote; the screenshot is no sentence
    assert answer.startswith('README.md ("Sock Shop : A Microservice Demo Application") '
                             'says: "The application is the user-facing part of an online '
                             'shop that sells socks."'), answer
    assert "Sock Shop frontend" not in answer and "remotes" not in answer
    refs = [c["evidence_ref"] for c in body["citations"]]
    assert refs and refs[0].startswith("README.md#L5@"), refs
    assert any(e["label"] == "Repository" for e in body["entities"]), body["entities"]


def test_the_repository_is_described_past_a_notice(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "Tell me about Sock Shop")
    assert '"The application is the user-facing part of an online shop' in body["answer"]


def test_a_how_to_question_naming_the_project_reads_the_other_pages_too(
        stack: Settings, tenant: str) -> None:
    """Not what it is: the README (no instructions) does not answer alone; the page whose
    command stands in an indented block (older Markdown) does, cited through that line."""
    body = ask(stack, tenant, "How do I provision Sock Shop with docker compose?")
    answer = body["answer"]
    assert answer.startswith("docs/deployment/docker-compose.md"), answer
    assert "docker-compose -f deploy/docker-compose/docker-compose.yml up -d" in answer
    refs = [c["evidence_ref"] for c in body["citations"]]
    assert any(r.startswith("docs/deployment/docker-compose.md#L13@") for r in refs), refs
