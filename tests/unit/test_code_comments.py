"""Comments that give reasons (connectors/code_comments.py): which count, and the document
quoted for a "why" question, each comment at its own lines with the code it explains."""

from __future__ import annotations

from pathlib import Path

from substrate.connectors.code_comments import is_comment_path, reasons, rendered
from substrate.connectors.gitrepo import batch_at
from substrate.demo.gitwriter import commit_tree, init_repo

PRODUCER = """\
package kafka

func config() {
	// Sarama has an issue in a single broker kafka if the broker is restarted.
	// This setting is to prevent that issue, but may swallow failed messages.
	cfg.Producer.RequiredAcks = sarama.NoResponse
	// set the version
	cfg.Version = Version
	url := "http://x#y" // not a reason
}
"""
COMPOSE = """\
services:
  recommendation:
    deploy:
      resources:
        limits:
          memory: 500M   # This is high to enable supporting the cache flag use case
"""
LICENSED = """\
# Copyright The Authors. Licensed under the Apache License, Version 2.0; unless required by
# applicable law, distributed WITHOUT WARRANTIES.
FROM alpine:3.20
"""


def test_a_comment_counts_when_it_gives_a_reason() -> None:
    assert reasons(PRODUCER) == [
        (4, ["Sarama has an issue in a single broker kafka if the broker is restarted.",
             "This setting is to prevent that issue, but may swallow failed messages."], 6)]
    assert reasons(COMPOSE) == [
        (6, ["This is high to enable supporting the cache flag use case"], 6)]
    assert reasons(LICENSED) == []  # a licence header is no reason
    assert reasons("/**\n * @return true if set, false otherwise\n */\nboolean x();\n") == []


def test_the_document_keeps_each_reason_at_its_lines_with_its_code() -> None:
    lines = rendered(PRODUCER, reasons(PRODUCER)).splitlines()
    assert lines[3:6] == [
        "Sarama has an issue in a single broker kafka if the broker is restarted.",
        "This setting is to prevent that issue, but may swallow failed messages.",
        "cfg.Producer.RequiredAcks = sarama.NoResponse"]
    assert [line for line in lines if line] == lines[3:6]  # everything else blank
    compose = rendered(COMPOSE, reasons(COMPOSE)).splitlines()
    assert compose[5] == ("This is high to enable supporting the cache flag use case "
                          "(memory: 500M).")


def test_which_files_are_read() -> None:
    assert is_comment_path("src/checkout/kafka/producer.go")
    assert is_comment_path("docker-compose.yml") and is_comment_path("src/cart/Dockerfile")
    assert not is_comment_path("src/checkout/tests/producer_test.go")
    assert not is_comment_path("vendor/lib/x.go") and not is_comment_path("README.md")


def test_a_file_with_reasons_is_a_document_of_its_path(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    short = commit_tree(repo, {"docker-compose.yml": COMPOSE, "kafka/producer.go": PRODUCER,
                               "Dockerfile": LICENSED}, "init", "2026-01-05T09:00:00Z")[:7]
    docs = {n.ceid: n for n in batch_at(repo).nodes if n.label == "Document"
            and n.props.get("kind") == "comments"}
    assert sorted(docs) == ["doc:docker-compose-yml", "doc:kafka-producer-go"]
    producer = docs["doc:kafka-producer-go"]
    assert producer.props["name"] == "kafka/producer.go"
    assert producer.provenance == (f"kafka/producer.go#L4@{short}",)
