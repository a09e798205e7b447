"""Which sentences of an ADR answer "why" (issue 8): the decision as stated, the forces of
its Context / drivers / considerations, a reason the Decision gives; never a lead-in alone."""

from __future__ import annotations

from substrate.retrieval.adr_text import (
    DECISION_BOOST,
    REASON_BOOST,
    Sentence,
    boost,
    is_force,
    lead_in,
    select,
    sentences,
    statement,
    written_status,
)

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


def test_a_list_is_one_sentence_with_its_lead_in() -> None:
    found = sentences(ADR, 1, "File uploads")
    by_text = {s.text: s for s in found}
    needs = next(s for s in found if s.text.startswith("The storage needs to accommodate"))
    assert needs.text == ("The storage needs to accommodate the following: Files can change "
                          "over time; Backdated submissions must stay readable.")
    assert (needs.line, needs.last, needs.lines()) == (11, 13, "L11-L13")
    assert needs.listed and is_force(needs)  # "accommodate ...": needs
    assert "We need to store uploaded files." in by_text  # the lead-in's paragraph before it
    first = statement(found)
    assert first is not None and first.text == (
        "We will use Amazon S3 as our underlying file storage mechanism for several reasons: "
        "It is available as a managed service at cloud.gov; It is simple to use.")
    assert (first.line, first.last, first.listed) == (19, 21, True)
    flow = by_text["The upload flow is: the browser posts the file; the backend scans it."]
    assert not flow.listed and not is_force(flow)  # a list, but no reasons announced
    assert not any(lead_in(s) for s in found)  # every lead-in here announces something
    assert not any(s.text.startswith(("Files can", "It is simple")) for s in found)


def test_the_quotes_state_the_decision_its_forces_and_a_reason() -> None:
    found = sentences(ADR, 1, "File uploads")
    worst_first = list(reversed(found))  # the ranking alone would quote the Consequences
    quotes = select(found, worst_first)
    assert len(quotes) == 4
    assert sum(is_force(q) for q in quotes) >= 2  # the best-ranked forces (listed reasons)
    texts = [q.text for q in quotes]
    assert any(t.startswith("We will use Amazon S3") for t in texts)  # with its reasons
    assert "How will we store them?" not in texts
    assert [q.line for q in quotes] == sorted(q.line for q in quotes)


def test_a_heading_announces_its_list_and_nested_items_follow_their_item() -> None:
    text = ("# 19. Use Alpine\n\n## Decision\n\nWe will use Alpine JS.\n\n"
            "## Considerations:\n\n"
            "* Offline checks are not possible\n"
            "* Alpine is a small library that:\n"
            "  * Works out of the box\n"
            "  * Includes a lightweight state-management solution\n"
            "\n## Consequences\n\n* Less custom JS.\n* One more dependency.\n")
    found = sentences(text, 1, "Use Alpine")
    considered = [s for s in found if s.section == "Considerations"]
    assert len(considered) == 1  # the heading announces the whole list, nested items too
    assert considered[0].text == (
        "Offline checks are not possible; Alpine is a small library that: Works out of the "
        "box; Includes a lightweight state-management solution.")
    assert considered[0].lines() == "L9-L12" and is_force(considered[0])
    # a Consequences list is quoted whole as well (where a record gives its reasons only
    # there: opg-use-an-lpa's ADR 14), but it is not a force
    consequences = [s for s in found if s.section == "Consequences"]
    assert [s.text for s in consequences] == ["Less custom JS; One more dependency."]
    assert not is_force(consequences[0])


def test_an_item_lead_in_groups_the_deeper_items_under_it() -> None:
    text = ("# 5. X\n\n## Decision\n\nWe will use X.\n\n"
            "* It is fast\n"
            "* Alpine is a small library that:\n"
            "  * Works out of the box\n"
            "  * Includes state management\n"
            "* It is cheap\n")
    found = sentences(text, 1, "X")
    assert [(s.text, s.lines()) for s in found] == [
        ("We will use X.", "L5"), ("It is fast", "L7"),
        ("Alpine is a small library that: Works out of the box; Includes state management.",
         "L8-L10"),
        ("It is cheap", "L11")]


def test_a_lead_in_before_prose_joins_its_first_sentence() -> None:
    text = ("# 7. Use Github Actions for CI\n\n## Decision\n\n"
            "Both options provide adequate coverage.\n\n"
            "Finding no issues with either option and opting to stick with Github-native "
            "workflows:\n\n**We will use [Github Actions](https://x) for CI**\n\n"
            "## Consequences\n\n* Tests gate merges.\n")
    found = sentences(text, 1, "Use Github Actions for CI")
    first = statement(found)
    assert first is not None and first.text == (
        "Finding no issues with either option and opting to stick with Github-native "
        "workflows: We will use Github Actions for CI")
    assert first.lines() == "L7-L9"


def test_a_long_list_is_quoted_up_to_its_budget() -> None:
    items = "".join(f"- Reason number {i} " + "x" * 100 + "\n" for i in range(1, 9))
    text = f"# 1. Y\n\n## Context\n\nWe need this for several reasons:\n{items}"
    (listed,) = sentences(text, 1, "Y")
    shown = listed.text.count("Reason number")
    assert 1 < shown < 8 and listed.lines() == f"L5-L{5 + shown}"


def test_no_decision_statement_quotes_the_best_ranked() -> None:
    text = "# 3. X\n\n## Context\n\nSlow calls hold threads.\n\n## Decision\n\nEvents.\n"
    found = sentences(text, 1, "X")
    assert statement(found) is None
    assert [q.text for q in select(found, found)] == ["Slow calls hold threads."]


MADR = """\
# Use Plain JUnit5 for advanced test assertions

## Context and Problem Statement

How to write readable test assertions for advanced tests?

## Decision Drivers

* Readable test code
* Fast feedback on failures

## Considered Options

* Plain JUnit5
* Hamcrest

## Decision Outcome

Chosen option: "Plain JUnit5", because it is a standard framework and the features of the
other frameworks do not outweigh the drawback of adding a new dependency.

### Consequences

* Good, because tests are more readable
* Bad, because more code is written

## Pros and Cons of the Options

### Plain JUnit5

* Good, because it is the standard
* Bad, because it needs more code

### Hamcrest

* Good, because it offers matchers
"""


def test_a_madr_record_groups_its_drivers_and_each_options_pros_and_cons() -> None:
    found = sentences(MADR, 1, "Use Plain JUnit5 for advanced test assertions")
    got = [(s.section, s.text, s.lines()) for s in found]
    assert ("Decision drivers", "Readable test code; Fast feedback on failures.", "L9-L10") in got
    first = statement(found)
    assert first is not None and first.text.startswith('Chosen option: "Plain JUnit5", because')
    assert first.lines() == "L19-L20"
    assert ("Decision outcome", "Consequences: Good, because tests are more readable; Bad, "
            "because more code is written.", "L22-L25") in got
    pros = [s for s in found if s.section == "Pros and cons"]
    assert [(s.text, s.lines()) for s in pros] == [
        ("Plain JUnit5: Good, because it is the standard; Bad, because it needs more code.",
         "L29-L32"),
        ("Hamcrest: Good, because it offers matchers.", "L34-L36")]
    assert all(is_force(s) for s in pros)


def test_a_sentence_the_record_repeats_is_quoted_once() -> None:
    """Adyen's ADR 2 restates its decision in a later section, word for word."""
    text = ("# 2. Matching notifications\n\n## Context\n\nWe need to match notifications.\n\n"
            "## Decision\n\nWe will use the native payment key.\n\n## Consequences\n\n"
            "It is indexed, so lookups are faster.\n\n## Decision\n\n"
            "We will use the native payment key.\n")
    found = sentences(text, 1, "Matching notifications")
    quotes = select(found, found)
    texts = [q.text for q in quotes]
    assert texts.count("We will use the native payment key.") == 1


def test_an_open_because_announces_its_list() -> None:
    """Adyen's ADR 9 (MADR): "Chose option: payment, because" then its reasons as items."""
    text = ("# 9. Endpoint\n\n## Decision Outcome\n\nChosen option: payment, because\n\n"
            "* it is per payment\n* it needs no customer\n\n## Context\n\nWe store tokens.\n")
    found = sentences(text, 1, "Endpoint")
    outcome = [s for s in found if s.section == "Decision outcome"]
    assert [s.text for s in outcome] == [
        "Chosen option: payment, because it is per payment; it needs no customer."]
    assert outcome[0].listed and outcome[0].lines() == "L5-L8"


TTS = """\
# TITLE:  Timezones

| CREATED DATE | LAST UPDATED | STATUS | AUTHOR |
| :---: | :---: | :---: | :---: |
| 06/06/2023 | 06/15/2023 | Accepted | @author |

## DECISION DRIVERS

We're looking for these primary outcomes with this work:

- Find all the time-dependent pieces.
- Decide what we can tackle now.

## CHOSEN OPTION:  Backend UTC, frontend UTC

After talking it through, the backend stores times as UTC only.
"""


def test_a_chosen_option_heading_is_the_decision_as_stated() -> None:
    """18F/TTS: "CHOSEN OPTION: X" is a decision section and its heading states the choice;
    the drivers stay forces, quoted as a list with their lead-in."""
    found = sentences(TTS, 1, "Timezones")
    first = statement(found)
    assert first is not None
    assert (first.section, first.text, first.lines()) == (
        "Chosen option", "CHOSEN OPTION: Backend UTC, frontend UTC", "L14")
    drivers = [s for s in found if s.section == "Decision drivers"]
    assert [(s.text, s.lines()) for s in drivers] == [
        ("We're looking for these primary outcomes with this work: Find all the "
         "time-dependent pieces; Decide what we can tackle now.", "L9-L12")]
    assert all(is_force(s) for s in drivers)
    proposed = sentences("# X\n\n## PROPOSED OR CHOSEN OPTION: Option 2\n\nIt is cheaper.\n",
                         1, "X")
    assert [s.section for s in proposed] == ["Chosen option", "Chosen option"]
    assert statement(proposed) == proposed[0]


def test_only_the_decision_sections_get_the_decision_boost() -> None:
    """Drivers are the forces behind a decision, not the decision: no decision boost (a
    driver stating a reason still gets the reason boost)."""
    def said(section: str, text: str = "Reports by day must be right.") -> float:
        return boost(Sentence(section, 1, text))

    for section in ("Decision", "Decision outcome", "Chosen option", "The decision"):
        assert said(section) == DECISION_BOOST, section
    assert said("Decision drivers") == 0.0
    assert said("Decision drivers", "Fast, because it is cached.") == REASON_BOOST
    assert said("Context") == 0.0


def test_the_status_a_metadata_table_states_cites_its_value_row() -> None:
    assert written_status(TTS, 1) == ("Accepted", 5)
    assert written_status("# X\n\n| Status | Implemented |\n\n## Context\n", 10) == (
        "Implemented", 12)
