"""A "why" question that no ADR answers, answered by the comment beside the code it explains
(connectors/code_comments.py), quoted at its lines through ``POST /search`` with no model.
checkout has a README of its own, which does not say why: the comment still answers.

Gold: the files this test writes (line numbers counted in them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from substrate.settings import Settings
from tests.support.repo_tenant import ask, assert_cited, repo_tenant

pytestmark = pytest.mark.integration

PRODUCER = """\
package kafka

import "github.com/IBM/sarama"

func config() *sarama.Config {
	cfg := sarama.NewConfig()
	// Sarama has an issue with a single Kafka broker when the broker is restarted.
	// This setting is to prevent that issue, but may swallow failed messages.
	cfg.Producer.RequiredAcks = sarama.NoResponse
	return cfg
}
"""
FILES = {
    "docker-compose.yml": ("services:\n  checkout:\n    build: ./checkout\n"
                           "    depends_on: [kafka]\n  kafka:\n    image: apache/kafka:3.7.0\n"),
    "checkout/README.md": "# checkout\n\nThis service provides checkout for the shop.\n",
    "checkout/go.mod": "module checkout\n\ngo 1.22\n",
    "checkout/kafka/producer.go": PRODUCER,
}


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with repo_tenant(stack, tmp_path_factory.mktemp("comments"), "t-comments", FILES) as name:
        yield name


def test_why_a_setting_is_answered_by_the_comment_beside_it(stack: Settings,
                                                           tenant: str) -> None:
    body = ask(stack, tenant, "Why does checkout's Kafka producer use RequiredAcks = NoResponse?")
    answer = body["answer"]
    assert answer.startswith("checkout/kafka/producer.go says:"), answer
    assert "This setting is to prevent that issue, but may swallow failed messages." in answer
    assert_cited(body, "checkout/kafka/producer.go#L8-L9")
