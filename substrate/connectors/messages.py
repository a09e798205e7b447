"""The messages a service's own code publishes and consumes: broker topics and queues, and
integration events.

Services that talk through a broker name no peer: ``checkout`` publishes to the Kafka topic
``orders`` and ``accounting`` consumes it; ``ordering-api`` publishes
``OrderStartedIntegrationEvent`` on the event bus and ``basket-api`` handles it. The
deployment only says that each uses the broker. The code says who sends what:

* **Event classes** (.NET event buses, MassTransit, NServiceBus): a handler of the event
  (``IIntegrationEventHandler<E>``, ``IConsumer<E>``, ``IHandleMessages<E>``) or a
  subscription to it (``AddSubscription<E, H>()``) consumes ``E``; creating an integration
  event (``new OrderStartedIntegrationEvent(...)``) or publishing a new message
  (``Publish(new E(...))``) publishes it.
* **Kafka topics**: a producer's record (Go ``sarama.ProducerMessage{Topic: ...}``, kafka-go's
  ``Writer{Topic: ...}``, Java's ``new ProducerRecord<>(topic, ...)``, ``kafkaTemplate.send``,
  kafkajs ``producer.send({topic})``, Python/.NET ``producer.send``/``produce``/``ProduceAsync``)
  publishes; a consumer's subscription (``subscribe(listOf(topic))``, ``.Subscribe(topic)``,
  ``@KafkaListener(topics = ...)``, ``KafkaConsumer('topic')``, ``ConsumePartition``,
  kafka-go's ``ReaderConfig{Topic: ...}``, kafkajs ``subscribe({topic})``) consumes.
* **RabbitMQ**: ``basic_publish(exchange=..., routing_key=...)``, amqplib's ``publish`` and
  ``sendToQueue``, Spring's ``convertAndSend`` publish; ``basic_consume(queue=...)``,
  amqplib's and Go amqp's ``Consume``, ``@RabbitListener(queues = ...)`` consume.

The topic may be written in place (``"orders"``) or as a constant defined in any source file
of the service (``const val topic = "orders"``, ``private const string TopicName =
"orders"``, Go's ``Topic = "orders"`` referred to as ``kafka.Topic``). A name that is neither
(a variable, a generic type parameter) names nothing. Only files that mention a broker or an
event bus are read for calls (:data:`_MESSAGING`), outside tests and vendored code; the
constants of a file that sends or receives nothing count when named for a topic, a queue, an
exchange or a routing key.

Each name is recorded on the service as ``publishes`` / ``consumes``, cited at its first line
(``attribute_refs``: ``publishes|<name>|<ref>``). For the replay's path filter,
:func:`may_name_messages` says whether a file's text holds anything this reader takes.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass

from substrate.connectors.aliases import NameIndex
from substrate.connectors.data_clients import state_values
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.source_calls import is_source_path

ROLES = ("publishes", "consumes")
# a file that may publish or consume: it mentions a broker, its client or an event bus (plain
# substring tests of the lower-cased text: a case-insensitive alternation scans it far slower)
_MESSAGING = ("kafka", "amqp", "rabbit", "pika", "sarama", "confluent", "integrationevent",
              "eventbus", "masstransit", "nservicebus", "servicebus", "producer", "consumer")
# the topic or queue: a string literal or a constant's name (``kafka.Topic``: Topic)
_X = r"""(?:"([\w.\-/]+)"|'([\w.\-/]+)'|((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*))"""
# each with the substrings any of its matches holds (a pattern runs only on a text holding one:
# Python's re scans a text for a pattern that starts with \b or a class at ~25 MB/s)
_PATTERNS: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (role, hints, re.compile(pattern, re.S)) for role, hints, pattern in (
        # event classes
        ("consumes", ("IConsumer", "IHandleMessages", "IIntegrationEventHandler"),
         r"\b(?:IIntegrationEventHandler|IConsumer|IHandleMessages)\s*<\s*(\w+)\s*>"),
        ("consumes", ("AddSubscription",), r"\bAddSubscription\s*<\s*(\w+)\s*,"),
        ("publishes", ("IntegrationEvent",), r"\bnew\s+(\w+IntegrationEvent)\s*\("),
        ("publishes", (".Publish",),
         r"\.Publish(?:Async)?\s*(?:<\w+>)?\s*\(\s*new\s+(\w+)\s*[({]"),
        # Kafka
        ("publishes", ("ProducerMessage",), r"\bProducerMessage\s*\{[^}]*?\bTopic\s*:\s*" + _X),
        ("publishes", ("Writer",), r"\bWriter\s*\{[^}]*?\bTopic\s*:\s*" + _X),
        ("consumes", ("ReaderConfig",), r"\bReaderConfig\s*\{[^}]*?\bTopic\s*:\s*" + _X),
        ("publishes", ("ProducerRecord",),
         r"\bnew\s+ProducerRecord\s*(?:<[^>]*>)?\s*\(\s*" + _X),
        ("publishes", ("afkaTemplate",),
         r"\b\w*[kK]afkaTemplate\s*\.send(?:Default)?\s*\(\s*" + _X),
        ("publishes", ("producer",), r"\bproducer\s*\.\s*send\s*\(\s*\{\s*topic\s*:\s*" + _X),
        ("publishes", ("roducer",),
         r"\b\w*[pP]roducer\s*\.\s*(?:send|produce|Produce|ProduceAsync)\s*\(\s*"
         r"(?:topic\s*=\s*)?" + _X),
        ("consumes", ("ubscribe",),
         r"(?:\.|\b)[sS]ubscribe\s*\(\s*\{\s*topics?\s*:\s*\[?\s*" + _X),
        ("consumes", ("ubscribe",),
         r"(?:\.|(?<![\w.]))[sS]ubscribe\s*\(\s*(?:(?:listOf|setOf|List\.of"
         r"|Arrays\.asList|Collections\.singletonList)\s*\(\s*|new\s*\[\]\s*\{\s*"
         r"|\[\s*)?(?:topics\s*=\s*\[?\s*)?" + _X),
        ("consumes", ("@KafkaListener",),
         r"@KafkaListener\s*\([^)]*?\btopics\s*=\s*\{?\s*" + _X),
        ("consumes", ("KafkaConsumer",), r"\bKafkaConsumer\s*\(\s*" + _X),
        ("consumes", ("ConsumePartition",), r"\bConsumePartition\s*\(\s*" + _X),
        ("consumes", (".Consume",), r"\.Consume\s*\(\s*\w+\s*,\s*\[\]string\s*\{\s*" + _X),
        # RabbitMQ
        ("publishes", ("basic_publish",),
         r"\bbasic_publish\s*\([^)]*?\bexchange\s*=\s*" + _X),
        ("publishes", ("basic_publish",),
         r"\bbasic_publish\s*\([^)]*?\brouting_key\s*=\s*" + _X),
        ("publishes", (".publish", ".sendToQueue"), r"\.(?:publish|sendToQueue)\s*\(\s*" + _X),
        ("publishes", ("convertAndSend",), r"\bconvertAndSend\s*\(\s*" + _X),
        ("consumes", ("basic_consume",), r"\bbasic_consume\s*\([^)]*?\bqueue\s*=\s*" + _X),
        ("consumes", (".consume", ".Consume"), r"\.[cC]onsume\s*\(\s*" + _X),
        ("consumes", ("@RabbitListener",),
         r"@RabbitListener\s*\([^)]*?\bqueues\s*=\s*\{?\s*" + _X),
    ))
# a constant: ``const val topic = "orders"``, ``private const string TopicName = "orders";``,
# ``static final String TOPIC = "orders";``, Go's ``Topic = "orders"``, ``TOPIC = 'orders'``
_CONSTANT = re.compile(r"""\b([A-Za-z_]\w*)\s*(?::\s*[\w<>?]+\s*)?:?=\s*["']([\w.\-/]+)["']""")
# the constants of a file that mentions no broker that still count: named for a topic, ...
_MESSAGE_CONSTANT = re.compile(r"topic|queue|exchange|routing_?key", re.I)
_CONSTANT_WORDS = ("topic", "queue", "exchange", "routing_key", "routingkey")
_TYPE_PARAMETER = re.compile(r"^T(?:[A-Z]\w*)?$")  # IConsumer<T>, IHandleMessages<TEvent>
_NOT_NAMES = frozenset({"", "self", "this", "it", "msg", "message", "event", "data", "payload"})
_COMMENT_LINE = re.compile(r"^\s*(?://|#|\*|/\*)")


def _named_constants(text: str, lowered: str) -> tuple[tuple[str, str], ...]:
    """``(name, value)`` of the string constants of ``text`` named for a topic, a queue, an
    exchange or a routing key. Looked for only on the lines holding one of those words (and
    the two after each, for a value on the next line): a name holds the word, and a scan of
    the whole text for any constant is ~40x slower (every word may start one)."""
    if not any(w in lowered for w in _CONSTANT_WORDS):
        return ()
    if len(lowered) != len(text):  # a character whose lower case is longer ('İ'): no map
        return tuple(dict.fromkeys((m.group(1), m.group(2)) for m in _CONSTANT.finditer(text)
                                   if _MESSAGE_CONSTANT.search(m.group(1))))
    starts: list[int] = []
    for word in _CONSTANT_WORDS:
        at = lowered.find(word)
        while at >= 0:
            starts.append(lowered.rfind("\n", 0, at) + 1)
            at = lowered.find(word, at + len(word))
    regions: list[list[int]] = []
    for start in sorted(set(starts)):
        end = start
        for _ in range(3):  # this line and two more
            nl = text.find("\n", end)
            end = len(text) if nl < 0 else nl + 1
        if regions and start <= regions[-1][1]:
            regions[-1][1] = max(end, regions[-1][1])
        else:
            regions.append([start, end])
    found: dict[tuple[str, str], None] = {}
    for start, end in regions:
        for m in _CONSTANT.finditer(text, start, end):
            if _MESSAGE_CONSTANT.search(m.group(1)):
                found[(m.group(1), m.group(2))] = None
    return tuple(found)


@dataclass(frozen=True)
class Message:
    role: str  # publishes | consumes
    name: str  # the topic, queue, exchange or event class
    line: int


def messages_in(text: str) -> tuple[tuple[Message, ...], tuple[tuple[str, str], ...]]:
    """What ``text`` (a source file) publishes and consumes, with each match's name as
    written (a literal or a constant's name: see :func:`resolve`), and the string constants
    it defines (``(name, value)``) that may name one: all of a file that publishes or
    consumes, else those named for a topic, a queue, an exchange or a routing key
    (``KAFKA_TOPIC = "orders"``, Go's ``Topic = "orders"``)."""
    lowered = text.lower()
    named = _named_constants(text, lowered)
    if not any(w in lowered for w in _MESSAGING):
        return (), named
    lines = text.splitlines()
    found: list[Message] = []
    for role, hints, pattern in _PATTERNS:
        if not any(h in text for h in hints):
            continue
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            if 0 < line <= len(lines) and _COMMENT_LINE.match(lines[line - 1]):
                continue
            groups = m.groups()
            if len(groups) == 1:  # an event class, by its name
                name = groups[0]
            else:  # a literal, or the name of a constant to resolve
                literal = groups[0] if groups[0] is not None else groups[1]
                name = literal if literal is not None else "$" + groups[2]
            found.append(Message(role, name, line))
    constants = tuple((m.group(1), m.group(2)) for m in _CONSTANT.finditer(text)) if found \
        else named
    return tuple(sorted(set(found), key=lambda x: (x.line, x.role, x.name))), constants


def may_name_messages(blob: str, text: str) -> bool:
    """Does ``text`` publish or consume anything, or define a constant that may name what
    another file does? (The replay's path filter.)"""
    messages, constants = _scanned(blob, text) if blob else messages_in(text)
    return bool(messages or constants)


def resolve(name: str, constants: dict[str, str]) -> str | None:
    """The name a match stands for: a literal as written; ``$kafka.Topic``, the value of the
    constant ``Topic``; None when it is no known constant or names nothing."""
    if name.startswith("$"):
        name = constants.get(name[1:].rsplit(".", 1)[-1], "")
    if name.lower() in _NOT_NAMES or _TYPE_PARAMETER.match(name) or len(name) < 2:
        return None
    return name


def service_messages(snap: GitSnapshot, folder: str, others: list[str]
                     ) -> dict[str, dict[str, tuple[str, int]]]:
    """``role -> name -> (path, line)`` of what the source files under ``folder`` (not under
    ``others``, the folders of other services inside it) publish and consume, first
    occurrence in path and line order."""
    prefix = "" if folder.strip("/") in ("", ".") else folder.strip("/") + "/"
    inner = tuple(o.strip("/") + "/" for o in others
                  if o.strip("/") and o.strip("/") + "/" != prefix
                  and (o.strip("/") + "/").startswith(prefix))
    paths = [p for p in _sources(snap) if p.startswith(prefix) and not p.startswith(inner)]
    snap.preload(paths)
    scanned = {p: _scanned(snap.blobs[p], snap.read(p)) for p in paths}
    constants: dict[str, str] = {}
    for _, defined in scanned.values():
        for name, value in defined:
            constants.setdefault(name, value)
    out: dict[str, dict[str, tuple[str, int]]] = {role: {} for role in ROLES}
    for path, (messages, _) in scanned.items():
        for message in messages:
            resolved = resolve(message.name, constants)
            if resolved is not None:
                out[message.role].setdefault(resolved, (path, message.line))
    return out


_SOURCES: dict[tuple[str, str], tuple[str, ...]] = {}  # (repo, commit) -> its source files
_BY_BLOB: OrderedDict[str, tuple[tuple[Message, ...], tuple[tuple[str, str], ...]]] = \
    OrderedDict()  # blob id -> messages_in of its text, least recently used first
CACHE_BLOBS = 100_000


def _sources(snap: GitSnapshot) -> tuple[str, ...]:
    """The snapshot's source files (:func:`is_source_path`), sorted; listed once per
    snapshot."""
    key = (str(snap.repo), snap.commit)
    if key not in _SOURCES:
        _SOURCES.clear()  # one snapshot at a time
        _SOURCES[key] = tuple(p for p in snap.files() if is_source_path(p))
    return _SOURCES[key]


def _scanned(blob: str, text: str) -> tuple[tuple[Message, ...], tuple[tuple[str, str], ...]]:
    """:func:`messages_in` of a blob's text, once per blob."""
    found = _BY_BLOB.get(blob)
    if found is None:
        found = _BY_BLOB[blob] = messages_in(text)
        while len(_BY_BLOB) > CACHE_BLOBS:
            _BY_BLOB.popitem(last=False)
    return found


def infer_messages(snap: GitSnapshot, index: NameIndex, dirs: dict[str, str]) -> None:
    """Sets ``publishes`` and ``consumes`` on each service of ``dirs`` (ceid -> its folder)
    from its source files, each cited at its first line."""
    folders = [f for f in dirs.values() if f is not None]
    for cid, folder in sorted(dirs.items()):
        if cid not in index or index.get(cid).label != "Service":
            continue
        found = service_messages(snap, folder, folders)
        for role in ROLES:
            if found[role]:
                state_values(index.get(cid), role, {name: snap.ref(path, line)
                                              for name, (path, line) in found[role].items()})
