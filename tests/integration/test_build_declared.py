"""What a service's build files declare, asked about a small Spring-and-Go shop:

* "where does customers store its data?": no datastore is among its dependencies (a Spring
  service on an embedded HSQLDB by default, its MySQL URL kept elsewhere), so the answer says
  that and the datastore clients its pom.xml declares, each at its line;
* "which Java version does customers use?": the ``<java.version>`` of the parent folder's
  pom.xml, which the module inherits (no version file, no numbered base image);
* "does payment call dispatch?": no edge either way, but both use rabbitmq (payment
  publishes orders, dispatch consumes them): no direct call, and the broker between them;
* "what uses registry?": customers, whose build holds the Eureka client starter, registers
  with the one service whose build holds the Eureka server's (no other file says so);
* "which framework does payment use?": Flask, from its requirements.txt.

Gold: the files this test writes (line numbers counted in them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from substrate.settings import Settings
from tests.support.repo_tenant import ask, assert_cited, repo_tenant

pytestmark = pytest.mark.integration

COMPOSE = """\
services:
  customers:
    build: ./customers
    depends_on: [config]
  config:
    image: shop/config:1.0
  payment:
    build: ./payment
    depends_on: [rabbitmq]
  dispatch:
    build: ./dispatch
    depends_on: [rabbitmq]
  rabbitmq:
    image: rabbitmq:3.8-management
  registry:
    build: ./registry
"""
REGISTRY_POM = """\
<project>
  <dependencies>
    <dependency>
      <artifactId>spring-cloud-starter-netflix-eureka-server</artifactId>
    </dependency>
  </dependencies>
</project>
"""
PARENT_POM = """\
<project>
  <properties>
    <java.version>17</java.version>
  </properties>
  <modules>
    <module>customers</module>
  </modules>
</project>
"""
CUSTOMERS_POM = """\
<project>
  <artifactId>customers</artifactId>
  <dependencies>
    <dependency>
      <groupId>org.springframework.boot</groupId>
      <artifactId>spring-boot-starter-data-jpa</artifactId>
    </dependency>
    <dependency>
      <groupId>com.mysql</groupId>
      <artifactId>mysql-connector-j</artifactId>
    </dependency>
    <dependency>
      <groupId>org.hsqldb</groupId>
      <artifactId>hsqldb</artifactId>
    </dependency>
    <dependency>
      <groupId>org.springframework.cloud</groupId>
      <artifactId>spring-cloud-starter-netflix-eureka-client</artifactId>
    </dependency>
  </dependencies>
</project>
"""
FILES = {"docker-compose.yml": COMPOSE, "pom.xml": PARENT_POM,
         "customers/pom.xml": CUSTOMERS_POM, "registry/pom.xml": REGISTRY_POM,
         "payment/requirements.txt": "Flask==2.0\npika==1.3.2\n",
         "payment/Dockerfile": "FROM python:3.9\nCOPY . /app\n",
         "dispatch/go.mod": "module dispatch\n\ngo 1.17\n"}


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with repo_tenant(stack, tmp_path_factory.mktemp("declared"), "t-declared", FILES) as name:
        yield name


def test_where_data_is_kept_without_a_datastore_names_the_declared_clients(
        stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "Where does customers store its data?")
    answer = body["answer"]
    assert answer.startswith("No datastore is recorded among the dependencies of customers"), \
        answer
    # what was checked: config (compose line 4); the clients: MySQL (line 10 of its pom),
    # HSQLDB (line 14); JPA is no datastore of its own
    assert "customers depends on: config" in answer, answer
    assert "Its build declares clients for: HSQLDB (embedded)" in answer and "MySQL" in answer
    assert "JPA" not in answer and "jpa" not in answer, answer
    assert_cited(body, "customers/pom.xml#L10", "customers/pom.xml#L14", "docker-compose.yml#L4")


def test_a_module_s_java_version_comes_from_its_parent_pom(stack: Settings,
                                                           tenant: str) -> None:
    body = ask(stack, tenant, "Which Java version does customers use?")
    assert body["route"]["intent"] == "attributes"
    assert "Java 17" in body["answer"], body["answer"]
    assert_cited(body, "pom.xml#L3")


def test_a_producer_and_a_consumer_of_one_broker_share_it(stack: Settings,
                                                         tenant: str) -> None:
    body = ask(stack, tenant, "Does payment call dispatch?")
    answer = body["answer"]
    assert answer.startswith("No direct call: no CALLS or DEPENDS_ON edge from payment to "
                             "dispatch is recorded, but dispatch and payment both use "
                             "rabbitmq"), answer
    # payment's depends_on (line 9) and dispatch's (line 12)
    assert_cited(body, "docker-compose.yml#L9", "docker-compose.yml#L12")


def test_a_eureka_client_depends_on_the_eureka_server(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "What uses registry?")
    assert body["answer"].startswith("registry is called directly by: customers (DEPENDS_ON)"), \
        body["answer"]
    assert_cited(body, "customers/pom.xml#L18")  # its eureka-client dependency


def test_the_framework_a_service_s_build_declares(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "Which framework does payment use?")
    assert body["route"]["intent"] == "attributes"
    assert "built with Flask" in body["answer"], body["answer"]
    assert_cited(body, "payment/requirements.txt#L1")

