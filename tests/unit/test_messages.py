"""What a service's code publishes and consumes (connectors/messages.py), and the answers
built from it (retrieval/strategies_messages.py, compose_messages.py). The sources below are
written for these tests in the shapes of the ecosystems' clients (Go sarama, Kotlin and C#
Kafka consumers, pika, amqplib, a .NET event bus)."""

from __future__ import annotations

from pathlib import Path

import pytest

from substrate.connectors.gitrepo import batch_at
from substrate.connectors.messages import Message, may_name_messages, messages_in, resolve
from substrate.demo.gitwriter import commit_tree, init_repo
from substrate.retrieval import compose_messages
from substrate.retrieval.composers import Citations
from substrate.retrieval.router import Intent, classify
from substrate.retrieval.strategies_messages import flows, named_messages


def _found(text: str) -> list[tuple[str, str, int]]:
    messages, _ = messages_in(text)
    return [(m.role, m.name, m.line) for m in messages]


@pytest.mark.parametrize(("text", "expected"), [
    # Go sarama: the topic a constant of another file (resolved per service)
    ('import "github.com/IBM/sarama"\nmsg := sarama.ProducerMessage{\n\tTopic: kafka.Topic,\n'
     '\tValue: v,\n}\n', [("publishes", "$kafka.Topic", 2)]),
    # Kotlin: subscribe inside apply, no receiver
    ('const val topic = "orders"\nval consumer = KafkaConsumer<String, ByteArray>(props).apply '
     '{\n    subscribe(listOf(topic))\n}\n', [("consumes", "$topic", 3)]),
    # C# Confluent
    ('using Confluent.Kafka;\nprivate const string TopicName = "orders";\n'
     '_consumer.Subscribe(TopicName);\n', [("consumes", "$TopicName", 3)]),
    # Python pika: exchange and routing key
    ("import pika\nself._channel.basic_publish(exchange='shop', routing_key='orders',\n"
     "    body=msg)\n", [("publishes", "orders", 2), ("publishes", "shop", 2)]),
    # Go amqp: the queue consumed; Node amqplib: sendToQueue
    ('import "github.com/rabbitmq/amqp091-go"\nmsgs, err := ch.Consume("orders", "", true)\n',
     [("consumes", "orders", 2)]),
    ("const amqp = require('amqplib');\nch.sendToQueue('emails', Buffer.from(x));\n",
     [("publishes", "emails", 2)]),
    # kafkajs, Spring
    ("const { Kafka } = require('kafkajs');\nawait producer.send({ topic: 'audit', messages });"
     "\nawait consumer.subscribe({ topics: ['audit'] });\n",
     [("publishes", "audit", 2), ("consumes", "audit", 3)]),
    ('@KafkaListener(topics = "payments", groupId = "x")\npublic void on(String m) {}\n'
     'kafkaTemplate.send("receipts", m);\n',
     [("consumes", "payments", 1), ("publishes", "receipts", 3)]),
    # a .NET event bus: a subscription, a handler, a new integration event
    ("eventBus.AddSubscription<OrderStartedIntegrationEvent, OrderStartedHandler>();\n"
     "class H : IIntegrationEventHandler<OrderPaidIntegrationEvent> {}\n"
     "var e = new OrderShippedIntegrationEvent(id);\n",
     [("consumes", "OrderStartedIntegrationEvent", 1),
      ("consumes", "OrderPaidIntegrationEvent", 2),
      ("publishes", "OrderShippedIntegrationEvent", 3)]),
])
def test_what_each_ecosystem_s_code_publishes_and_consumes(
        text: str, expected: list[tuple[str, str, int]]) -> None:
    assert sorted(_found(text)) == sorted(expected)


def test_what_names_nothing() -> None:
    """No broker or event bus mentioned: no call is read; a commented line, a generic type
    parameter, a variable that is no constant name nothing."""
    assert _found("items.subscribe('orders')\nch.consume('x')\n") == []
    text = ("using MassTransit;\n// bus.Publish(new OrderPlaced(id));\n"
            "class C<T> : IConsumer<T> {}\nconsumer.Subscribe(topicFromConfig);\n")
    messages, constants = messages_in(text)
    assert [m.name for m in messages] == ["T", "$topicFromConfig"]
    assert [resolve(m.name, dict(constants)) for m in messages] == [None, None]
    assert resolve("$kafka.Topic", {"Topic": "orders"}) == "orders"


def test_the_replay_reads_a_file_that_sends_receives_or_names_a_topic() -> None:
    assert may_name_messages("b1", "import pika\nch.basic_consume(queue='orders')\n")
    assert may_name_messages("b2", 'package kafka\nvar Topic = "orders" // sarama\n')
    assert may_name_messages("b3", 'ORDERS_TOPIC = "orders"\n')  # named for a topic
    assert not may_name_messages("b4", 'GREETING = "hello"\nprint(GREETING)\n')


def test_constants_named_for_a_topic_wherever_they_are_written() -> None:
    """The constants of a file that sends nothing are looked for on the lines naming a topic,
    queue, exchange or routing key only: a value on the next line, several on one line, one
    repeated, and a text whose lower case is longer than itself ('İ') all read as before."""
    text = ("x = 1\nORDERS_TOPIC =\n  'orders'\nA_QUEUE = 'q1'; B_EXCHANGE = \"ex\"\n"
            "GREETING = 'hi'\nORDERS_TOPIC = 'orders'\nrouting_key: str = 'rk'\n")
    expected = (("ORDERS_TOPIC", "orders"), ("A_QUEUE", "q1"), ("B_EXCHANGE", "ex"),
                ("routing_key", "rk"))
    assert messages_in(text) == ((), expected)
    assert messages_in("# İstanbul\n" + text) == ((), expected)
    assert messages_in("TOPICS = ['a', 'b']\n") == ((), ())


def test_a_service_s_messages_with_constants_of_its_other_files(tmp_path: Path) -> None:
    """checkout's topic is a constant of its kafka package; accounting consumes it; the
    messages are cited where sent and subscribed."""
    repo = init_repo(tmp_path / "repo")
    short = commit_tree(repo, {
        "docker-compose.yml": ("services:\n  checkout:\n    build: ./checkout\n"
                               "  accounting:\n    build: ./accounting\n"
                               "  kafka:\n    image: apache/kafka:3.7.0\n"),
        "checkout/main.go": ('package main\nimport "github.com/IBM/sarama"\n'
                             "func send() {\n\tmsg := sarama.ProducerMessage{\n"
                             "\t\tTopic: kafka.Topic,\n\t}\n}\n"),
        "checkout/kafka/producer.go": 'package kafka\n\nvar (\n\tTopic = "orders"\n)\n',
        "checkout/go.mod": "module checkout\n\ngo 1.22\n",
        "accounting/Accounting.csproj": '<Project Sdk="Microsoft.NET.Sdk">\n</Project>\n',
        "accounting/Consumer.cs": ('using Confluent.Kafka;\nclass Consumer {\n'
                                   '    private const string TopicName = "orders";\n'
                                   "    void Run() { _consumer.Subscribe(TopicName); }\n}\n"),
    }, "init", "2026-01-05T09:00:00Z")[:7]
    nodes = {n.ceid: n.props for n in batch_at(repo).nodes}
    assert nodes["service:checkout"]["publishes"] == ["orders"]
    assert f"publishes|orders|checkout/main.go#L4@{short}" \
        in nodes["service:checkout"]["attribute_refs"]
    assert nodes["service:accounting"]["consumes"] == ["orders"]
    assert "publishes" not in nodes["service:accounting"]


@pytest.mark.parametrize(("question", "intent"), [
    ("Who publishes OrderStatusChangedToPaidIntegrationEvent, and who subscribes to it?",
     Intent.MESSAGES),
    ("Which integration events does payment-processor consume and publish?", Intent.MESSAGES),
    ("Which services consume the orders topic?", Intent.MESSAGES),
    ("Which services use Kafka, and which of them publish vs consume?", Intent.MESSAGES),
    ("What does checkout publish?", Intent.MESSAGES),
    ("Kafka publishers and consumers?", Intent.MESSAGES),
    # a relation, not messages: what it publishes to, who consumes an API
    ("What does notification publish to?", Intent.DEPENDENCY),
    ("Which services consume the payments API?", Intent.CALLERS),
    ("How can we prevent outages?", Intent.FREE_TEXT),
])
def test_a_messages_question(question: str, intent: Intent) -> None:
    assert classify(question).intent is intent


ROWS = [
    {"entity": {"ceid": "service:ordering-api", "name": "ordering-api"},
     "publishes": ["OrderStartedIntegrationEvent"], "consumes": [],
     "refs": ["publishes|OrderStartedIntegrationEvent|o/Handler.cs#L27@abc1234"]},
    {"entity": {"ceid": "service:basket-api", "name": "basket-api"}, "publishes": [],
     "consumes": ["OrderStartedIntegrationEvent"],
     "refs": ["consumes|OrderStartedIntegrationEvent|b/Extensions.cs#L19@abc1234"]},
    {"entity": {"ceid": "service:checkout", "name": "checkout"}, "publishes": ["orders"],
     "consumes": [], "refs": ["publishes|orders|checkout/main.go#L4@abc1234"]},
]


def test_the_messages_a_question_names() -> None:
    known = flows(ROWS)
    assert known[0]["publishes"] == {
        "OrderStartedIntegrationEvent": "o/Handler.cs#L27@abc1234"}
    assert named_messages("Who handles the OrderStarted event?", known) == [
        "OrderStartedIntegrationEvent"]
    assert named_messages("Who consumes the orders topic?", known) == ["orders"]
    assert named_messages("What reads orders-db?", known) == []  # another name


def test_the_answers_name_both_ends_each_cited() -> None:
    known = flows(ROWS)
    cites = Citations()
    text = compose_messages.message_flows({"messages": [{
        "name": "OrderStartedIntegrationEvent",
        "publishers": [{"service": known[0]["service"],
                        "evidence_ref": "o/Handler.cs#L27@abc1234"}],
        "consumers": [{"service": known[1]["service"],
                       "evidence_ref": "b/Extensions.cs#L19@abc1234"}]}]}, cites)
    assert text == ("OrderStartedIntegrationEvent is published by ordering-api[1] and consumed"
                    " by basket-api[2] (as the services' code says).")
    assert [c["evidence_ref"] for c in cites.items] == ["o/Handler.cs#L27@abc1234",
                                                       "b/Extensions.cs#L19@abc1234"]
    text = compose_messages.message_flows({"messages": [{
        "name": "orders", "consumers": [],
        "publishers": [{"service": known[2]["service"],
                        "evidence_ref": "checkout/main.go#L4@abc1234"}]}]}, Citations())
    assert text.endswith("no service's code consuming it is recorded.")
    own = Citations()
    text = compose_messages.message_flows({
        "subject": known[1]["service"], "services": [known[1]],
        "others": {"publishes": {}, "consumes": {"OrderStartedIntegrationEvent": [
            {"service": known[0]["service"], "evidence_ref": "o/Handler.cs#L27@abc1234"}]}}},
        own)
    assert text == ("basket-api consumes OrderStartedIntegrationEvent[1] (published by "
                    "ordering-api[2]) (as the services' code says).")


def test_a_message_is_a_dataclass_of_role_name_line() -> None:
    assert Message("publishes", "orders", 3).role == "publishes"


def test_what_passes_between_two_services() -> None:
    from substrate.retrieval.strategies_graph import passing

    sent = {str(f["service"]["ceid"]): f for f in flows(ROWS)}
    found = passing(sent, "service:basket-api", "service:ordering-api")
    assert found is not None
    assert [(f["from"]["name"], f["message"], f["to"]["name"]) for f in found["flows"]] == [
        ("ordering-api", "OrderStartedIntegrationEvent", "basket-api")]
    assert passing(sent, "service:checkout", "service:basket-api") == {"flows": []}
    assert passing(sent, "service:checkout", "service:web") is None  # web sends nothing
