"""Which sentences of an ADR answer "why" (issue 8): the decision as stated, the forces of
its Context / drivers / considerations, a reason the Decision gives; never a lead-in alone."""

from __future__ import annotations

from substrate.retrieval.rationale import is_force, lead_in, select, sentences, statement

ADR = """\
# 16. File uploads

Date: 2022-08-01

## Status

Pending review

## Context

We need to store uploaded files. The storage needs to accommodate the following:
- Files can change over time.
- Backdated submissions must stay readable.

How will we store them?

## Decision

We will use Amazon S3 as our underlying file storage mechanism for several reasons:
* It is available as a managed service at cloud.gov
* It is simple to use

The upload flow is:
* the browser posts the file
* the backend scans it

We chose Boto3 because it is the official SDK.

## Consequences

Uploads need a bucket per environment.
"""


def test_sentences_know_lead_ins_and_the_lists_they_announce() -> None:
    found = sentences(ADR, 1, "File uploads")
    by_text = {s.text: s for s in found}
    assert lead_in(by_text["The storage needs to accommodate the following:"])
    assert by_text["Files can change over time."].listed  # "accommodate ...": needs
    assert by_text["It is available as a managed service at cloud.gov"].listed  # reasons
    assert not by_text["the browser posts the file"].listed  # "The upload flow is:"
    assert is_force(by_text["It is simple to use"]) and not is_force(by_text[
        "the backend scans it"])
    assert by_text["Files can change over time."].line == 12
    first = statement(found)
    assert first is not None and first.text.startswith("We will use Amazon S3")


def test_the_quotes_state_the_decision_its_forces_and_a_reason() -> None:
    found = sentences(ADR, 1, "File uploads")
    worst_first = list(reversed(found))  # the ranking alone would quote the Consequences
    quotes = select(found, worst_first)
    assert len(quotes) == 4
    assert sum(is_force(q) for q in quotes) >= 2  # the best-ranked forces (listed reasons)
    texts = [q.text for q in quotes]
    assert any(t.startswith("We will use Amazon S3") for t in texts)  # a lead-in, stated
    assert "How will we store them?" not in texts
    assert "The storage needs to accommodate the following:" not in texts
    assert [q.line for q in quotes] == sorted(q.line for q in quotes)


def test_no_decision_statement_quotes_the_best_ranked() -> None:
    text = "# 3. X\n\n## Context\n\nSlow calls hold threads.\n\n## Decision\n\nEvents.\n"
    found = sentences(text, 1, "X")
    assert statement(found) is None
    assert [q.text for q in select(found, found)] == ["Slow calls hold threads."]
