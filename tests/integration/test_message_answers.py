"""Who publishes and who consumes, asked about a small shop whose services talk through a
broker (the deployment only says that each uses it):

* checkout publishes the Kafka topic ``orders`` (Go sarama, the topic a constant of its
  kafka package); accounting (C#) and fraud (Kotlin) consume it;
* ordering publishes ``OrderStartedIntegrationEvent`` on an event bus; basket subscribes.

Asked through ``POST /search`` with no model; each end is cited at the line of its code that
sends or subscribes. Gold: the files this test writes (line numbers counted in them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from substrate.settings import Settings
from tests.support.repo_tenant import ask, assert_cited, repo_tenant

pytestmark = pytest.mark.integration

COMPOSE = """\
services:
  checkout:
    build: ./checkout
    depends_on: [kafka]
  accounting:
    build: ./accounting
    depends_on: [kafka]
  fraud:
    build: ./fraud
    depends_on: [kafka]
  ordering:
    build: ./ordering
    depends_on: [rabbitmq]
  basket:
    build: ./basket
    depends_on: [rabbitmq]
  kafka:
    image: apache/kafka:3.7.0
  rabbitmq:
    image: rabbitmq:3.13
  web:
    build: ./web
    depends_on: [checkout]
"""
CHECKOUT = """\
package main

import "github.com/IBM/sarama"

func send(p sarama.AsyncProducer, v []byte) {
	msg := sarama.ProducerMessage{
		Topic: kafka.Topic,
		Value: sarama.ByteEncoder(v),
	}
	p.Input() <- &msg
}
"""
FRAUD = """\
package fraud

const val topic = "orders"

fun main() {
    val consumer = KafkaConsumer<String, ByteArray>(props).apply {
        subscribe(listOf(topic))
    }
}
"""
ACCOUNTING = """\
using Confluent.Kafka;

class Consumer
{
    private const string TopicName = "orders";

    public void Run() => _consumer.Subscribe(TopicName);
}
"""
ORDERING = """\
class CreateOrderHandler
{
    public async Task Handle(CreateOrder command)
    {
        var started = new OrderStartedIntegrationEvent(command.UserId);
        await _eventBus.PublishAsync(started);
    }
}
"""
BASKET = """\
static class Extensions
{
    public static void AddServices(this IHostApplicationBuilder builder)
    {
        builder.AddRabbitMqEventBus("eventbus")
               .AddSubscription<OrderStartedIntegrationEvent, OrderStartedHandler>();
    }
}
"""
PROJECT = '<Project Sdk="Microsoft.NET.Sdk.Web">\n</Project>\n'
FILES = {"docker-compose.yml": COMPOSE,
         "checkout/main.go": CHECKOUT, "checkout/go.mod": "module checkout\n\ngo 1.22\n",
         "checkout/kafka/producer.go": 'package kafka\n\nvar (\n\tTopic = "orders"\n)\n',
         "fraud/build.gradle.kts": "plugins { kotlin(\"jvm\") }\n",
         "fraud/src/main/kotlin/fraud/main.kt": FRAUD,
         "accounting/Accounting.csproj": PROJECT, "accounting/Consumer.cs": ACCOUNTING,
         "ordering/Ordering.csproj": PROJECT, "ordering/CreateOrderHandler.cs": ORDERING,
         "basket/Basket.csproj": PROJECT, "basket/Extensions.cs": BASKET,
         "web/package.json": '{"name": "web", "dependencies": {"express": "^4.18"}}\n',
         "web/server.js": "const express = require('express');\n"}


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with repo_tenant(stack, tmp_path_factory.mktemp("messages"), "t-messages", FILES) as name:
        yield name


def test_a_topic_s_publishers_and_consumers(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "Which services consume the orders topic?")
    assert body["route"]["intent"] == "messages"
    assert body["answer"] == ("orders is published by checkout[1] and consumed by "
                              "accounting[2], fraud[3] (as the services' code says)."), \
        body["answer"]
    assert_cited(body, "checkout/main.go#L6", "accounting/Consumer.cs#L7",
                 "fraud/src/main/kotlin/fraud/main.kt#L7")


def test_an_event_named_without_its_suffix(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "Who publishes the OrderStarted event, and who subscribes to it?")
    assert body["answer"].startswith("OrderStartedIntegrationEvent is published by ordering[1]"
                                     " and consumed by basket[2]"), body["answer"]
    assert_cited(body, "ordering/CreateOrderHandler.cs#L5", "basket/Extensions.cs#L6")


def test_what_one_service_publishes_with_who_consumes_it(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "What does checkout publish?")
    assert body["answer"] == ("checkout publishes orders[1] (consumed by accounting[2], "
                              "fraud[3]) (as the services' code says)."), body["answer"]


def test_who_publishes_and_consumes_through_a_broker(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "Which services use kafka, and which of them publish vs consume?")
    assert body["answer"] == ("Of the services using kafka, as the services' code says: "
                              "accounting consumes orders[1]; checkout publishes orders[2]; "
                              "fraud consumes orders[3]."), body["answer"]


def test_a_service_whose_code_sends_nothing_falls_back_to_its_relations(
        stack: Settings, tenant: str) -> None:
    """web's code sends and receives nothing: the answer is what it depends on."""
    body = ask(stack, tenant, "What messages does web publish?")
    assert body["route"]["intent"] == "messages"
    assert body["answer"].startswith("web depends on: checkout (DEPENDS_ON)"), body["answer"]


def test_no_call_but_a_message_passes_through_the_broker(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "Does checkout call accounting?")
    answer = body["answer"]
    assert answer.startswith("No direct call: no CALLS or DEPENDS_ON edge from checkout to "
                             "accounting is recorded, but accounting and checkout both use "
                             "kafka"), answer
    assert answer.endswith("a message broker; as their code says, checkout publishes orders"
                           "[3], which accounting consumes[4]."), answer
    assert_cited(body, "checkout/main.go#L6", "accounting/Consumer.cs#L7")


def test_no_call_and_nothing_passes_between_two_consumers(stack: Settings,
                                                          tenant: str) -> None:
    body = ask(stack, tenant, "Does accounting call fraud?")
    assert body["answer"].endswith("a message broker; as their code says, nothing one of them "
                                   "publishes is consumed by the other."), body["answer"]
