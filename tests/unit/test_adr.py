"""Architecture decision records: Nygard, MADR, emoji statuses, supersession, WHY/MENTIONS."""

from __future__ import annotations

from pathlib import Path

import pytest

from substrate.connectors.adr import adr_ceid, decision_lines, is_adr_path, parse_adr
from substrate.connectors.adr_fields import iso_day, normalise_status
from substrate.connectors.gitrepo import batch_at
from substrate.demo.gitwriter import commit_tree, init_repo

NYGARD = """\
# 3. Synchronous calls from checkout service to payment service

Date: 2026-08-05

## Status

Superseded by [ADR-0007](0007-async-payments.md)

## Context

The checkout service waits for the PSP. The CartSvc is not involved.

## Decision

The checkout service calls the payment service over REST.

## Consequences

Simple.
"""
MADR = """\
---
status: accepted
date: 2026-09-28
---
# Asynchronous payment authorisation

Supersedes [ADR-3](0003-sync-payments.md).

## Context and Problem Statement

Slow PSP calls hold checkout threads.

## Decision Drivers

* the orders-db must not be touched

## Decision Outcome

Chosen option: "events". The checkout service publishes to Kafka.
"""
BULLETS = """\
# Use JWT sessions

* Status: ✅ accepted
* Date: 2026-08-12
"""


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("Accepted", "accepted"),
        ("✅", "accepted"),
        ("❌ Rejected", "rejected"),
        ("⚠️", "deprecated"),
        ("♻️ Superseded by ADR-9", "superseded"),
        ("Accepted, superseded by ADR-9", "superseded"),
        ("Superceded by [8. Session storage](0008-session.md)", "superseded"),  # misspelt
        # the superseding record's own status (DEFRA's ADR 36 and 33, alphagov's ADR 7)
        ("Accepted. Supersedes [ADR-0031](./0031-x.md). Extended by ADR-0049", "accepted"),
        ("Proposed\n\nSupersedes the \"option 3\" portion of ADR 0016", "proposed"),
        ("Deprecated (no superseding ADR)", "deprecated"),
        ("🚧", "proposed"),
        ("Draft", "proposed"),
        ("whatever", "unknown"),
        # in effect: the words records use for an accepted decision that has been carried out
        ("Implemented", "accepted"),
        ("Done", "accepted"),
        ("In effect", "accepted"),
        ("Active", "accepted"),
        # a word's start only: "done" is not in "abandoned", nor "active" in "inactive"
        ("Abandoned", "rejected"),
        ("Inactive", "deprecated"),
    ],
)
def test_status_normalisation(text: str, status: str) -> None:
    assert normalise_status(text) == status


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("docs/adr/0001-x.md", True),
        ("docs/decisions/0001-x.md", True),
        ("docs/architecture/decisions/0001-x.md", True),
        ("architecture-decision-record/0001-x.md", True),
        ("services/pay/adr/0001-x.md", True),
        ("doc/adr/0001-x.md", True),  # adr-tools' default
        ("doc/architecture/decisions/0001-x.md", True),
        ("architecture/decisions/0002-y.md", True),
        ("docs/decision-log/0003-z.md", True),
        ("docs/ADR/0004-w.md", True),  # a folder in capitals
        ("Docs/Architecture/Decisions/0005-v.md", True),
        # another folder called "decisions", its files numbered (opg-use-an-lpa's ADR 1)
        ("docs/application/decisions/0001-record-architecture-decisions.md", True),
        ("docs/application/decisions/README.md", False),
        ("src/decisions/engine.md", False),  # a folder of that name, no numbered records
        ("docs/adr/README.md", False),
        ("docs/adr/template.md", False),
        ("docs/adr/0001-x.txt", False),
        ("docs/design/0001-x.md", False),
    ],
)
def test_adr_paths(path: str, expected: bool) -> None:
    assert is_adr_path(path) is expected


def test_ceids() -> None:
    assert adr_ceid("docs/adr/0007-async.md", "docs/adr") == "adr:0007"
    assert adr_ceid("docs/adr/ADR-12-x.md", "docs/adr") == "adr:0012"
    assert adr_ceid("docs/adr/use-kafka.md", "docs/adr") == "adr:use-kafka"
    assert adr_ceid("svc/adr/0001-x.md", "docs/adr") == "adr:svc-adr-0001"


def test_parse_nygard_madr_and_bullets() -> None:
    nygard = parse_adr("docs/adr/0003-sync-payments.md", NYGARD, "docs/adr")
    assert (nygard.ceid, nygard.name, nygard.status, nygard.status_line, nygard.date) == (
        "adr:0003", "Synchronous calls from checkout service to payment service",
        "superseded", 7, "2026-08-05",
    )  # fmt: skip
    assert nygard.summary == "The checkout service calls the payment service over REST."
    madr = parse_adr("docs/adr/0007-async-payments.md", MADR, "docs/adr")
    assert (madr.name, madr.status, madr.status_line, madr.date) == (
        "Asynchronous payment authorisation", "accepted", 2, "2026-09-28",
    )  # fmt: skip
    assert madr.summary.startswith('Chosen option: "events".')
    bullets = parse_adr("docs/adr/0002-jwt.md", BULLETS, "docs/adr")
    assert (bullets.status, bullets.date, bullets.status_line) == ("accepted", "2026-08-12", 3)


def test_status_as_written() -> None:
    """The status text is kept as the record writes it (links by their text), next to the
    normalised status; a record stating none has none."""
    written = {path: parse_adr(path, text, "docs/adr").status_text for path, text in (
        ("docs/adr/0003-sync-payments.md", NYGARD), ("docs/adr/0007-async.md", MADR),
        ("docs/adr/0002-jwt.md", BULLETS),
        ("docs/adr/0004-review.md", "# 4. X\n\n## Status\n\nIn **Review**.\n"),
        ("docs/adr/0005-none.md", "# 5. No status\n\n## Context\n\nText.\n"))}
    assert written == {"docs/adr/0003-sync-payments.md": "Superseded by ADR-0007",
                       "docs/adr/0007-async.md": "accepted",
                       "docs/adr/0002-jwt.md": "✅ accepted",
                       "docs/adr/0004-review.md": "In Review",
                       "docs/adr/0005-none.md": ""}
    long = parse_adr("docs/adr/0006-long.md", "# 6. L\n\n## Status\n\n" + "word " * 80,
                     "docs/adr")
    assert len(long.status_text) == 200 and long.status_text.endswith("…")


def _repo(tmp_path: Path) -> tuple[Path, str]:
    repo = init_repo(tmp_path / "repo")
    files = {
        "docs/adr/0003-sync-payments.md": NYGARD,
        "docs/adr/0007-async-payments.md": MADR,
        "docs/adr/README.md": "# Decisions\n\nSee ADR-0003.\n",
        "services/checkout/README.md": "# checkout\n",
        "services/payment/README.md": "# payment\n",
        "services/cart/README.md": "# cart\n",
        "docker-compose.yml": "services:\n  orders-db:\n    image: postgres:16\n"
        "  kafka:\n    image: bitnami/kafka:3\n",
    }
    sha = commit_tree(repo, files, "init", "2026-09-28T16:00:00Z")
    return repo, sha[:7]


def test_decision_nodes_and_edges(tmp_path: Path) -> None:
    repo, short = _repo(tmp_path)
    batch = batch_at(repo)
    decisions = {n.ceid: n.props for n in batch.nodes if n.label == "DecisionNode"}
    assert set(decisions) == {"adr:0003", "adr:0007"}
    assert decisions["adr:0003"]["status"] == "superseded"
    assert decisions["adr:0003"]["status_text"] == "Superseded by ADR-0007"
    assert decisions["adr:0007"]["status_text"] == "accepted"
    assert decisions["adr:0007"]["number"] == 7
    old, new = (f"docs/adr/{p}#L{{}}@{short}" for p in ("0003-sync-payments.md",
                "0007-async-payments.md"))  # fmt: skip
    edges = {
        (e.type, e.src, e.dst): e.evidence_ref for e in batch.edges if e.src.startswith("adr:")
    }
    assert edges == {
        ("SUPERSEDES", "adr:0007", "adr:0003"): old.format(7),
        ("WHY", "adr:0003", "service:checkout"): old.format(1),
        ("WHY", "adr:0003", "service:payment"): old.format(1),
        ("MENTIONS", "adr:0003", "service:cart"): old.format(11),
        ("WHY", "adr:0007", "service:checkout"): new.format(19),
        ("WHY", "adr:0007", "infra:kafka"): new.format(19),
        ("WHY", "adr:0007", "service:payment"): new.format(5),
        ("MENTIONS", "adr:0007", "infra:orders-db"): new.format(15),
    }
    supersedes = next(e for e in batch.edges if e.type == "SUPERSEDES")
    assert supersedes.props["evidence_refs"] == [old.format(7), new.format(7)]


def test_two_records_with_one_number_are_two_decisions(tmp_path: Path) -> None:
    """alphagov/govuk-infrastructure has two ADR 10s (Argo, and Dex)."""
    repo = init_repo(tmp_path / "repo")
    folder = "docs/architecture/decisions"
    commit_tree(repo, {
        f"{folder}/0010-use-argo-for-continuous-delivery.md":
            "# 10. Use Argo for continuous delivery\n\nDate: 2021-10-11\n\n## Status\n\n"
            "Accepted\n\n## Context\n\nWe need CD.\n",
        f"{folder}/0010-use-dex-for-authentication.md":
            "# 10. Use Dex for authentication\n\nDate: 2021-10-12\n\n## Status\n\nAccepted\n\n"
            "## Context\n\nWe need single sign-on.\n",
    }, "two tens", "2026-08-03T09:00:00Z")
    nodes = {n.ceid: n.props["name"] for n in batch_at(repo).nodes if n.label == "DecisionNode"}
    assert nodes == {"adr:0010": "Use Argo for continuous delivery",
                     "adr:0010-use-dex-for-authentication": "Use Dex for authentication"}


def test_a_record_superseded_only_by_the_later_one(tmp_path: Path) -> None:
    """DEFRA's ADR 36 says "Accepted. Supersedes ADR-0031"; ADR 31 still reads Accepted. A
    proposed record superseding part of another (ADR 33 on ADR 16) supersedes nothing yet."""
    repo = init_repo(tmp_path / "repo")
    folder = "docs/architecture/decisions"

    def adr(n: int, title: str, status: str) -> str:
        return f"# {n}. {title}\n\nDate: 2026-01-0{n % 9 + 1}\n\n## Status\n\n{status}\n\n" \
               "## Context\n\nWe need it.\n"
    commit_tree(repo, {
        f"{folder}/0016-admin-ui.md": adr(16, "Admin UI", "Accepted"),
        f"{folder}/0031-ledger.md": adr(31, "Ledger", "Accepted"),
        f"{folder}/0033-rbac.md": adr(33, "RBAC", "Proposed\n\nSupersedes part of [ADR 0016]"
                                     "(0016-admin-ui.md)"),
        f"{folder}/0036-stream.md": adr(36, "Stream", "Accepted. Supersedes [ADR-0031]"
                                       "(./0031-ledger.md)"),
    }, "records", "2026-08-03T09:00:00Z")
    batch = batch_at(repo)
    status = {n.ceid: n.props["status"] for n in batch.nodes if n.label == "DecisionNode"}
    assert status == {"adr:0016": "accepted", "adr:0031": "superseded", "adr:0033": "proposed",
                      "adr:0036": "accepted"}
    written = {n.ceid: n.props.get("status_text") for n in batch.nodes}
    assert written["adr:0031"] == "Accepted"
    assert ("SUPERSEDES", "adr:0036", "adr:0031") in {(e.type, e.src, e.dst) for e in batch.edges}


def test_the_misspelt_supersession_is_read_both_ways(tmp_path: Path) -> None:
    """opg-use-an-lpa's ADR 3 says "Superceded by [8 ...]" and ADR 8 "Supercedes [3 ...]"."""
    repo = init_repo(tmp_path / "repo")
    folder = "docs/architecture/decisions"
    commit_tree(repo, {
        f"{folder}/0003-jwt.md": "# 3. Session storage using JWT\n\nDate: 2019-02-21\n\n"
        "## Status\n\nSuperceded by [8. Session storage using an encrypted cookie]"
        "(0008-cookie.md)\n\n## Context\n\nSmall session.\n",
        f"{folder}/0008-cookie.md": "# 8. Session storage using an encrypted cookie\n\n"
        "Date: 2019-05-01\n\n## Status\n\nAccepted\n\nSupercedes [3. Session storage using "
        "JWT](0003-jwt.md)\n\n## Context\n\nNo extra infrastructure.\n",
    }, "records", "2026-08-03T09:00:00Z")
    batch = batch_at(repo)
    status = {n.ceid: n.props["status"] for n in batch.nodes if n.label == "DecisionNode"}
    assert status == {"adr:0003": "superseded", "adr:0008": "accepted"}
    assert [(e.src, e.dst) for e in batch.edges if e.type == "SUPERSEDES"] == [
        ("adr:0008", "adr:0003")]


TABLE = """\
# TITLE:  Determine how to handle timezones


| CREATED DATE | LAST UPDATED | STATUS | AUTHOR | REVIEWERS |
| :---: | :---: | :---: | :---: | :---: |
| 06/06/2023 | 06/15/2023 | Implemented | @author | @reviewer |

## CONTEXT AND PROBLEM STATEMENT

Dates are converted back and forth.
"""


def test_status_and_date_from_a_header_table() -> None:
    """The 18F/TTS templates state status and date in a table under the title; the status
    cites the value row, the original word is kept, the created date is the date."""
    rec = parse_adr("docs/adrs/0002-how-to-handle-timezones.md", TABLE, "docs/adrs")
    assert (rec.name, rec.status, rec.status_text, rec.status_line, rec.date) == (
        "Determine how to handle timezones", "accepted", "Implemented", 6, "2023-06-06")


@pytest.mark.parametrize(
    ("table", "status", "line", "date"),
    [
        # key/value rows, no separator
        ("| Status | Accepted |\n| Date | 2023-09-08 |", "accepted", 3, "2023-09-08"),
        # key/value rows whose first row the separator makes a header
        ("| **Status** | Proposed |\n|---|---|\n| Date | 15/06/2023 |", "proposed", 3,
         "2023-06-15"),
        # a header of two columns: the value row, not the other label
        ("| Status | Date |\n|---|---|\n| Rejected | June 6, 2023 |", "rejected", 5,
         "2023-06-06"),
        # a decided column before a last updated one; a date not given is no date
        ("| LAST UPDATED | DECIDED | STATUS |\n|--|--|--|\n| 2024-01-02 | 3 May 2023 | Done |",
         "accepted", 5, "2023-05-03"),
        ("| CREATED DATE | LAST UPDATED | STATUS |\n|---|---|---|\n| N/A | 01/31/2024 | x |",
         "unknown", 5, "2024-01-31"),
    ],
)
def test_key_value_and_header_tables(table: str, status: str, line: int, date: str) -> None:
    rec = parse_adr("docs/adr/0004-t.md", f"# 4. T\n\n{table}\n\n## Context\n\nWhy.\n",
                    "docs/adr")
    assert (rec.status, rec.status_line, rec.date) == (status, line, date)


def test_a_table_is_read_only_when_nothing_else_states_the_status() -> None:
    """A ``Status:`` line or a ``## Status`` section comes first; a table further down (the
    options compared, with their own status) states nothing about the record."""
    table = "| Status | Date |\n|---|---|\n| Accepted | 2023-01-01 |\n"
    field = parse_adr("docs/adr/0005-f.md", f"# 5. F\n\nStatus: Proposed\n\n{table}",
                      "docs/adr")
    assert (field.status, field.status_line, field.date) == ("proposed", 3, "2023-01-01")
    later = parse_adr("docs/adr/0006-l.md", f"# 6. L\n\n## Options\n\n{table}", "docs/adr")
    assert (later.status, later.date) == ("unknown", "")
    fenced = parse_adr("docs/adr/0007-c.md", f"# 7. C\n\n```\n{table}```\n", "docs/adr")
    assert fenced.status == "unknown"


@pytest.mark.parametrize(
    ("text", "day"),
    [("2023-06-06", "2023-06-06"), ("2023/6/6", "2023-06-06"), ("06/15/2023", "2023-06-15"),
     ("15/06/2023", "2023-06-15"), ("6th June 2023", "2023-06-06"),
     ("Sept. 3, 2021", "2021-09-03"), ("N/A", ""), ("13/13/2023", ""), ("2023-02-30", "")],
)
def test_date_forms(text: str, day: str) -> None:
    assert iso_day(text) == day


@pytest.mark.parametrize(
    ("heading", "name"),
    [
        ("TITLE: Establishing a policy for X", "Establishing a policy for X"),
        ("ADR: Use poetry", "Use poetry"),
        ("title:  ADR-12: Use poetry", "Use poetry"),
        ("ADR-12: Use poetry", "Use poetry"),
        ("12. Use poetry", "Use poetry"),
        ("Adrian's proposal: poetry", "Adrian's proposal: poetry"),
        ("Keep the Title: field", "Keep the Title: field"),
    ],
)
def test_title_labels_are_stripped(heading: str, name: str) -> None:
    assert parse_adr("docs/adr/0001-x.md", f"# {heading}\n", "docs/adr").name == name


CHOSEN = """\
# TITLE: Timezones

## DECISION DRIVERS

- Reports by day must be right.

## CHOSEN OPTION:  Backend UTC, frontend **ET**

After talking it through we convert the backend.

### Consequences

- Tests change.
"""


def test_a_chosen_option_heading_states_the_decision() -> None:
    """18F/TTS and MADR: "CHOSEN OPTION: X" is a decision section whose heading states the
    choice; "Decision drivers" is not the decision."""
    rec = parse_adr("docs/adrs/0002-tz.md", CHOSEN, "docs/adrs")
    assert rec.summary == "Backend UTC, frontend ET. After talking it through we convert the " \
                          "backend."
    lines = decision_lines(rec)
    assert lines[0] == (7, "Backend UTC, frontend ET")
    assert (9, "After talking it through we convert the backend.") in lines
    assert all(no > 6 for no, _ in lines)  # nothing of the drivers
    proposed = parse_adr("docs/adrs/0004-x.md", "# X\n\n## Context\n\nWhy.\n\n"
                         "## PROPOSED OR CHOSEN OPTION: Option 2\n", "docs/adrs")
    assert proposed.summary == "Option 2."
    drivers = parse_adr("docs/adr/0003-d.md", "# D\n\n## Decision Drivers\n\nSpeed.\n\n"
                        "## Context\n\nSlow.\n", "docs/adr")
    assert drivers.summary == "Slow." and decision_lines(drivers) == []


def test_a_status_superseded_with_only_a_link_is_passive(tmp_path: Path) -> None:
    """modernisation-platform's ADR 4 reads "⌛️ Superseded [0019](0019-use-bash-and-go.md)":
    no "by", yet ADR 19 supersedes it."""
    repo = init_repo(tmp_path / "repo")
    folder = "architecture-decision-record"
    commit_tree(repo, {
        f"{folder}/0004-use-bash-node-python.md":
            "# 4. Use bash, node and python\n\nDate: 2020-11-19\n\n## Status\n\n"
            "⌛️ Superseded [0019](0019-use-bash-and-go.md)\n\n## Context\n\nWe need languages.\n",
        f"{folder}/0019-use-bash-and-go.md":
            "# 19. Use bash and go\n\nDate: 2021-11-01\n\n## Status\n\n✅ Accepted\n\n"
            "## Context\n\nGo is typed.\n",
    }, "records", "2026-08-03T09:00:00Z")
    batch = batch_at(repo)
    edges = {(e.type, e.src, e.dst) for e in batch.edges}
    assert ("SUPERSEDES", "adr:0019", "adr:0004") in edges
    assert ("SUPERSEDES", "adr:0004", "adr:0019") not in edges
