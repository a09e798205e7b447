"""A technology deployed under several names (ftgo-application: Compose runs ``mysql`` and
``dynamodblocal``, its Kubernetes manifests ``ftgo-mysql`` and ``ftgo-dynamodb-local``):
"which services use mysql?" answers for every datastore running it, not only the one whose
name the question happens to say; "which datastores are there?" lists each, cited where it is
defined, and a tool beside a datastore (a CDC service, an init job) is none. Gold: the files
this test writes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from substrate.settings import Settings
from tests.support.repo_tenant import ask, repo_tenant

pytestmark = pytest.mark.integration

COMPOSE = """\
services:
  mysql:
    image: mysql/mysql-server:8.0
  dynamodblocal:
    build: ./dynamodblocal
    image: ftgo/dynamodblocal
  cdc-service:
    image: eventuateio/eventuate-tram-cdc-mysql-service:0.3.0
    environment:
      SPRING_DATASOURCE_URL: jdbc:mysql://mysql/eventuate
  order-service:
    image: ftgo/order-service
    environment:
      SPRING_DATASOURCE_URL: jdbc:mysql://mysql/ftgo_order_service
  order-history-service:
    image: ftgo/order-history-service
    environment:
      AWS_DYNAMODB_ENDPOINT_URL: http://dynamodblocal:8000
"""
K8S = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ftgo-mysql
spec:
  template:
    spec:
      containers:
      - name: ftgo-mysql
        image: mysql/mysql-server:8.0
        ports:
        - containerPort: 3306
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ftgo-kitchen-service
spec:
  template:
    spec:
      containers:
      - name: ftgo-kitchen-service
        image: ftgo/kitchen-service
        env:
        - name: SPRING_DATASOURCE_URL
          value: jdbc:mysql://ftgo-mysql/ftgo_kitchen_service
"""


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    files = {"docker-compose.yml": COMPOSE, "deployment/kubernetes/all.yml": K8S,
             "dynamodblocal/Dockerfile": "FROM amazon/dynamodb-local:1.13.6\n"}
    with repo_tenant(stack, tmp_path_factory.mktemp("ftgo"), "t-tech", files) as name:
        yield name


def test_every_datastore_running_a_technology_answers_for_it(stack: Settings, tenant: str
                                                             ) -> None:
    body = ask(stack, tenant, "Which services use mysql?")
    assert body["answer"].startswith("mysql runs as ftgo-mysql, mysql."), body["answer"]
    # the Compose users of mysql and the Kubernetes user of ftgo-mysql (the CDC service reads
    # mysql too: it uses the datastore, it is not one)
    callers = {c["from"] for c in body["citations"]}
    assert callers == {"service:order-service", "service:cdc-service",
                       "service:ftgo-kitchen-service"}


def test_datastores_are_each_cited_and_tools_beside_them_are_none(stack: Settings,
                                                                 tenant: str) -> None:
    body = ask(stack, tenant, "Which datastores are there?")
    listed = body["answer"]
    assert listed.startswith("3 result(s): dynamodblocal["), listed
    assert "ftgo-mysql[" in listed and "mysql[" in listed and "cdc-service" not in listed
    assert len(body["citations"]) == 3
    assert all("#L" in c["evidence_ref"] for c in body["citations"])
