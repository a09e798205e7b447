"""A technology the question names that no entity is called: "which services use MongoDB?"
when Sock Shop's datastores are carts-db and orders-db (image ``mongo``) and user-db (on
27017). The datastores running it become the question's seeds, marked ``technology``, and a
callers/dependency traversal starts from each of them."""

from __future__ import annotations

import re
from typing import Any

from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.scope import ReadScope

MAX_ENTITIES = 20
# a technology's names in questions -> (words of its images, its well-known ports)
TECHNOLOGIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "mongodb": (("mongo",), ("27017",)), "mongo": (("mongo",), ("27017",)),
    "postgres": (("postgres", "postgis", "timescale"), ("5432",)),
    "postgresql": (("postgres", "postgis", "timescale"), ("5432",)),
    "mysql": (("mysql", "mariadb"), ("3306",)), "mariadb": (("mariadb", "mysql"), ("3306",)),
    "redis": (("redis", "valkey"), ("6379",)), "memcached": (("memcached",), ("11211",)),
    "kafka": (("kafka", "redpanda"), ("9092",)), "rabbitmq": (("rabbitmq",), ("5672",)),
    "elasticsearch": (("elasticsearch", "opensearch"), ("9200",)),
    "opensearch": (("opensearch",), ("9200",)), "cassandra": (("cassandra", "scylla"), ("9042",)),
    "nats": (("nats",), ("4222",)), "minio": (("minio",), ()), "zookeeper": (("zookeeper",), ()),
    "etcd": (("etcd",), ()), "consul": (("consul",), ()),
    "sqlserver": (("mssql", "sqlserver"), ("1433",)), "mssql": (("mssql", "sqlserver"), ("1433",)),
    "dynamodb": (("dynamodb",), ()), "dynamo": (("dynamodb",), ()),
    "couchdb": (("couchdb",), ("5984",)), "clickhouse": (("clickhouse",), ("8123", "9000")),
    "cockroachdb": (("cockroach",), ("26257",)), "valkey": (("valkey",), ("6379",)),
    "pulsar": (("pulsar",), ("6650",)), "activemq": (("activemq",), ("61616",)),
    "solr": (("solr",), ("8983",)), "scylladb": (("scylla",), ("9042",)),
}  # fmt: skip
_WORD = re.compile(r"[a-z0-9]+")


def technology_named(question: str) -> str | None:
    """The first technology the question names ("SQL Server" is ``sqlserver``)."""
    words = _WORD.findall(question.lower())
    joined = [a + b for a, b in zip(words, words[1:], strict=False)]
    return next((w for w in [*words, *joined] if w in TECHNOLOGIES), None)


def names_it(entity: dict[str, Any], tech: str) -> bool:
    """Is the technology part of the linked entity's own name ("redis-cart" for redis)?"""
    images = TECHNOLOGIES[tech][0]
    name = str(entity.get("name") or "").lower()
    return any(w in name for w in images)


async def technology_seeds(reader: GraphReader, scope: ReadScope, tech: str | None,
                           linked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The datastores running ``tech`` (the technology the question names, by
    ``technology_named``), when no datastore linked by its own name is called by it; []
    otherwise."""
    # a datastore linked by its own name is the answer's subject; a fuzzy match of "MongoDB"
    # is one of many, and a service named after it ("dynamodblocal-init") is not it
    if tech is None or any(e["label"] == "Infrastructure" and names_it(e, tech)
                           and not str(e.get("why") or "").startswith("fuzzy")
                           for e in linked):
        return []
    words, ports = TECHNOLOGIES[tech]
    rows = await reader.rows("retrieval/technology_entities", scope, words=list(words),
                             ports=list(ports), limit=MAX_ENTITIES)
    return [{**r["entity"], "mention": tech, "score": 1.0, "why": "technology",
             "image": r["image"]} for r in rows]
