"""An ADR answers a question no family took only on words that tell the records apart: a
word most records name ("platform" in every record of a platform team) is left out of
``rationale.on_topic``'s count (``rationale.common_words``, ``retrieval/decision_word_spread``).
Before, "which PostgreSQL version does the platform use?" was answered with a record on
network access."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from substrate.settings import Settings
from tests.support.repo_tenant import ask, repo_tenant

pytestmark = pytest.mark.integration


def _adr(number: int, title: str, context: str, decision: str) -> str:
    return (f"# {number}. {title}\n\nDate: 2024-0{number}-01\n\n## Status\n\nAccepted\n\n"
            f"## Context\n\n{context}\n\n## Decision\n\n{decision}\n")


ADRS = {
    "docs/adr/0001-restrict-network-access.md": _adr(
        1, "Restrict network access", "The platform accounts were reachable from anywhere.",
        "We will allow network access to the platform only through the VPN."),
    "docs/adr/0002-central-logging.md": _adr(
        2, "Central logging", "Each team of the platform kept its own logs.",
        "We will ship every log line of the platform to one OpenSearch cluster."),
    "docs/adr/0003-nightly-backups.md": _adr(
        3, "Nightly backups", "Databases on the platform had no tested restore.",
        "We will snapshot every platform database each night and test a restore weekly."),
    "docs/adr/0004-dns-zones.md": _adr(
        4, "One DNS zone per account", "Records of the platform collided between accounts.",
        "We will delegate one DNS zone to each platform account."),
    "docs/adr/0005-resource-tagging.md": _adr(
        5, "Mandatory resource tags", "Costs on the platform could not be split by team.",
        "We will reject platform resources that lack an owner tag."),
}


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with repo_tenant(stack, tmp_path_factory.mktemp("platform"), "t-adrwords", ADRS) as name:
        yield name


def test_a_word_every_record_names_does_not_make_a_record_the_answer(
        stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "Which PostgreSQL version does the platform use?")
    assert not body["answer"].startswith("adr:"), body["answer"]


def test_the_words_that_tell_records_apart_still_find_the_record(
        stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "How is network access to the platform restricted?")
    assert body["answer"].startswith('adr:0001 "Restrict network access"'), body["answer"]
    refs = [c["evidence_ref"] for c in body["citations"]]
    assert any(r.startswith("docs/adr/0001-restrict-network-access.md#L") for r in refs)
