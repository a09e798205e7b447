""""Which decisions mention X" and "why do we use X": the term a question names, and the
line of a record that names it (whole words only)."""

from __future__ import annotations

import pytest

from substrate.retrieval.decision_mentions import alternatives, asked_term, first_naming_line
from substrate.retrieval.rationale import why_term


@pytest.mark.parametrize(("question", "term"), [
    ("What decisions mention Redis?", "redis"),
    ("Which ADRs mention Piscina?", "piscina"),
    ("Which decisions are about feature flags?", "feature flags"),
    ("List the ADRs that reference the ledger", "ledger"),
    ("Which decision records discuss MongoDB?", "mongodb"),
    ("Why did we adopt Kafka?", None),
    ("Which decisions were superseded?", None),
    ("Which later ADRs cite ADR 14 as a driver?", "adr 14"),
    ("Which decisions refer to ADR-0012?", "adr 12"),
    ("Which ADR extends ADR 11 (File parsing)?", "adr 11"),
    ("What is the status of the decision about admission policies vs Gatekeeper?", None),
])
def test_the_term_a_listing_question_names(question: str, term: str | None) -> None:
    assert asked_term(question) == term


@pytest.mark.parametrize(("question", "term"), [
    ("Why do we use Piscina?", "piscina"),
    ("Why did we choose exceljs for parsing summary logs?", "exceljs"),
    ("Why did we choose Joi (instead of Mongoose) for the schema?", "joi"),
    ("Why do we use GOV.UK Notify?", "gov.uk notify"),
    ("Why was ADR 3 superseded?", None),
    ("Why did checkout move to the payments team?", None),
])
def test_the_term_a_why_question_names(question: str, term: str | None) -> None:
    assert why_term(question) == term


def test_a_whole_word_is_named_not_a_part_of_one() -> None:
    text = "# 7. Caches\n\nWe rediscovered the problem.\n\nUse Redis for sessions.\n"
    assert first_naming_line(text, "redis") == (4, "Use Redis for sessions.")
    assert first_naming_line("We rediscovered it.", "redis") is None
    assert first_naming_line("redis-commander is a UI", "redis") is None  # another name


def test_a_reference_to_another_record_by_number() -> None:
    line = "See [ADR 0014](./0014-replace-terraform-cloud.md) for why."
    assert first_naming_line(f"# 18. Use Concourse\n\n{line}\n", "adr 14") == (2, line)
    assert first_naming_line("Drivers: [replace it](0014-replace.md)", "adr 14") is not None
    assert first_naming_line("Supersedes ADR-0014.", "adr 14") is not None
    assert first_naming_line("ADR-140 and 14 others", "adr 14") is None


def test_alternatives_a_question_names() -> None:
    assert alternatives("argo / argocd") == ["argo", "argos", "argocd", "argocds"]
    assert alternatives("redis or memcached") == ["redis", "memcached", "memcacheds"]
    assert alternatives("feature flags") == ["feature flags", "feature flag"]


def test_a_term_names_its_other_number_too() -> None:
    """"Which ADRs are about sessions?" finds "Session storage using JWT" (opg-use-an-lpa)."""
    assert alternatives("sessions") == ["sessions", "session"]
    assert alternatives("policy") == ["policy", "policies"]
    assert alternatives("status") == ["status"]  # no guess at a word that keeps its s
    assert first_naming_line("# 3. Session storage using JWT\n", "sessions") == (
        0, "# 3. Session storage using JWT")
    assert first_naming_line("We chose ArgoCD.", "argo / argocd") == (0, "We chose ArgoCD.")
