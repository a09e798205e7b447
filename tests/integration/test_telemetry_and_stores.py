"""Two answers about a small shop where every service sends its traces to an OpenTelemetry
collector (as opentelemetry-demo's do):

* what Kafka's failure reaches travels through the services that need Kafka, never through
  the collector (a service keeps working when its collector fails; before, every service that
  exports traces was listed "through otel-collector");
* "where does reviews store its data?" names its database, read from a libpq keyword/value
  connection string (``host=reviews-db user=...``, which named nothing before);
* the risk ranking leaves the collector out: it had the most dependents and sat in a cycle
  with Kafka (the collector reads Kafka, Kafka sends it traces), so it ranked first.

Gold: the Compose file this test writes (line numbers counted in it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gds_jobs.risks import rank_risks
from gds_jobs.runtime import job_context, job_scope
from substrate.settings import Settings
from tests.support.repo_tenant import ask, assert_cited, cited, repo_tenant

pytestmark = pytest.mark.integration

COMPOSE = """\
services:
  frontend:
    image: shop/frontend:1.0
    environment:
      CHECKOUT_ADDR: checkout:5050
      OTEL_EXPORTER_OTLP_ENDPOINT: http://otel-collector:4317
  checkout:
    image: shop/checkout:1.0
    environment:
      KAFKA_ADDR: kafka:9092
      OTEL_EXPORTER_OTLP_ENDPOINT: http://otel-collector:4317
  reviews:
    image: shop/reviews:1.0
    environment:
      DB_CONNECTION_STRING: host=reviews-db user=app password=s3cret dbname=reviews
      OTEL_EXPORTER_OTLP_ENDPOINT: http://otel-collector:4317
  otel-collector:
    image: otel/opentelemetry-collector-contrib:0.98.0
    environment:
      KAFKA_ADDR: kafka:9092
  kafka:
    image: apache/kafka:3.7.0
    environment:
      OTEL_EXPORTER_OTLP_ENDPOINT: http://otel-collector:4317
  reviews-db:
    image: postgres:16
"""


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with repo_tenant(stack, tmp_path_factory.mktemp("telemetry"), "t-telemetry",
                     {"docker-compose.yml": COMPOSE}) as name:
        yield name


def test_a_failure_does_not_travel_through_the_telemetry_collector(stack: Settings,
                                                                   tenant: str) -> None:
    body = ask(stack, tenant, "What would be affected if kafka went down?")
    assert body["route"]["intent"] == "callers"
    answer = body["answer"]
    # checkout (line 10) and the collector (line 20) use Kafka; frontend calls checkout (5)
    assert "called directly by: checkout" in answer and "otel-collector" in answer, answer
    assert "and indirectly by: frontend (through checkout)" in answer, answer
    assert "reviews" not in answer and "through otel-collector" not in answer, answer
    assert {c["from"] for c in body["citations"]} == {
        "service:checkout", "service:otel-collector", "service:frontend"}
    assert_cited(body, "docker-compose.yml#L10", "docker-compose.yml#L20", "docker-compose.yml#L5")


def test_where_a_service_stores_its_data_names_its_database(stack: Settings,
                                                           tenant: str) -> None:
    body = ask(stack, tenant, "Where does reviews store its data?")
    assert body["route"]["intent"] == "dependency"
    answer = body["answer"]
    assert answer.startswith("reviews depends on: reviews-db (DEPENDS_ON at host=reviews-db "
                             "user=app password=*** dbname=reviews)"), answer
    assert "otel-collector" not in answer and "s3cret" not in str(body)
    assert [r.split("@")[0] for r in cited(body)] == ["docker-compose.yml#L15"]


def test_the_risk_ranking_leaves_the_collector_out(stack: Settings, tenant: str) -> None:
    with job_context(stack) as ctx:
        items = rank_risks(ctx, job_scope(stack, tenant), limit=10)
    ranked = [i.ceid for i in items]
    assert "service:otel-collector" not in ranked, ranked
    # kafka: used by checkout and by the collector (two dependents), no cycle through it
    kafka = next(i for i in items if i.ceid == "infra:kafka")
    assert {f.factor for f in kafka.factors} >= {"pagerank", "dependents"}
    assert "dependency_cycle" not in {f.factor for i in items for f in i.factors}


def test_whether_a_service_uses_something_is_answered_yes_or_no(stack: Settings,
                                                                tenant: str) -> None:
    """Gold: checkout's KAFKA_ADDR (line 10); reviews uses reviews-db (15) and no cache."""
    yes = ask(stack, tenant, "Does checkout use Kafka?")
    assert yes["route"]["intent"] == "dependency"
    assert yes["answer"] == "Yes: checkout depends on: kafka (DEPENDS_ON at kafka:9092)[1].", \
        yes["answer"]
    assert [r.split("@")[0] for r in cited(yes)] == ["docker-compose.yml#L10"]
    no = ask(stack, tenant, "Does reviews use a cache?")
    assert no["answer"].startswith("No: no CALLS or DEPENDS_ON edge from reviews to a cache is "
                                   "recorded. reviews depends on: reviews-db"), no["answer"]
    # frontend -> checkout (line 5) -> kafka (line 10): not directly
    deep = ask(stack, tenant, "Does frontend use kafka?")
    assert deep["answer"] == ("Not directly: no CALLS or DEPENDS_ON edge from frontend to kafka "
                              "is recorded, but frontend reaches kafka (through checkout)[1][2]."
                              ), deep["answer"]
    assert [r.split("@")[0] for r in cited(deep)] == ["docker-compose.yml#L5",
                                                      "docker-compose.yml#L10"]
    called = ask(stack, tenant, "Does frontend call checkout?")
    assert called["answer"].startswith("Yes: frontend depends on: checkout (CALLS at "
                                       "checkout:5050)"), called["answer"]
