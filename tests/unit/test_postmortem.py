"""Post-mortems → FailurePattern (timestamp, severity), CAUSED_BY (services, PRs), AFFECTED."""

from __future__ import annotations

from pathlib import Path

import pytest

from substrate.connectors.designdocs import is_design_path
from substrate.connectors.gitrepo import batch_at
from substrate.connectors.postmortem import is_postmortem_path, normalise_severity, parse_incident
from substrate.demo.gitwriter import commit_tree, init_repo

FRONT = """\
---
date: 2026-09-17T14:32:00Z
severity: SEV-1
---
# Checkout payment timeouts

## Summary

A third of purchases failed.

## Impact

* checkout service: purchases failed.
* The PaymentService saw five times the load.

## Root Cause

PR #431 changed the `checkout` timeouts; retries hit payments-db hard.

## Timeline

* PR #436 rolled it back; the orders service was fine.
"""
PLAIN = """\
# Search results stale

**Date:** 2026-09-02
Severity: P2

## What went wrong

The search-service consumer stalled (see https://github.com/acme/shop/pull/417).

## Customer impact

Stale results in the search service.
"""


@pytest.mark.parametrize(
    ("text", "severity"),
    [("SEV-1", "SEV1"), ("sev 2", "SEV2"), ("P3", "P3"), ("high", "high"), ("", "")],
)
def test_severity(text: str, severity: str) -> None:
    assert normalise_severity(text) == severity


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("docs/postmortems/2026-09-17-x.md", True),
        ("docs/incidents/x.md", True),
        ("postmortems/x.md", True),
        ("incidents/x.markdown", True),
        ("docs/post-mortems/x.md", True),
        ("docs/incident-reviews/2026-01-02-db.md", True),
        ("retrospectives/x.md", True),
        ("docs/rca/x.md", True),
        ("docs/postmortems/README.md", False),
        ("docs/postmortems/template.md", False),
        ("docs/design/x.md", False),
    ],
)
def test_paths(path: str, expected: bool) -> None:
    assert is_postmortem_path(path) is expected


def test_parse_fields() -> None:
    inc = parse_incident("docs/postmortems/2026-09-17-checkout.md", FRONT)
    assert (inc.ceid, inc.name, inc.name_line, inc.date, inc.severity, inc.summary) == (
        "incident:2026-09-17-checkout", "Checkout payment timeouts", 5,
        "2026-09-17T14:32:00Z", "SEV1", "A third of purchases failed.",
    )  # fmt: skip
    plain = parse_incident("incidents/search.md", PLAIN)
    assert (plain.date, plain.severity, plain.name) == ("2026-09-02", "P2", "Search results stale")


def test_incident_edges(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    files = {
        "docs/postmortems/2026-09-17-checkout.md": FRONT,
        "incidents/search.md": PLAIN,
        "services/checkout/README.md": "# checkout\n",
        "services/payment/README.md": "# payment\n",
        "services/orders/README.md": "# orders\n",
        "services/search/README.md": "# search\n",
        "docker-compose.yml": "services:\n  search-service:\n    image: acme/search:1\n"
        "  payments-db:\n    image: postgres:16\n",
    }
    short = commit_tree(repo, files, "init", "2026-09-18T09:30:00Z")[:7]
    batch = batch_at(repo)
    nodes = {n.ceid: n for n in batch.nodes}
    assert nodes["incident:2026-09-17-checkout"].props["date"] == "2026-09-17T14:32:00Z"
    assert nodes["pr:431"].props == {"name": "PR #431", "number": 431}
    co, se = (f"{p}#L{{}}@{short}" for p in ("docs/postmortems/2026-09-17-checkout.md",
              "incidents/search.md"))  # fmt: skip
    edges = {
        (e.type, e.src.split(":", 1)[1], e.dst): (e.evidence_ref, e.confidence)
        for e in batch.edges
        if e.type in ("CAUSED_BY", "AFFECTED")
    }
    assert edges == {
        ("CAUSED_BY", "2026-09-17-checkout", "pr:431"): (co.format(18), 1.0),
        ("CAUSED_BY", "2026-09-17-checkout", "service:checkout"): (co.format(18), 0.95),
        ("CAUSED_BY", "2026-09-17-checkout", "infra:payments-db"): (co.format(18), 0.95),
        ("AFFECTED", "2026-09-17-checkout", "service:checkout"): (co.format(13), 0.95),
        ("AFFECTED", "2026-09-17-checkout", "service:payment"): (co.format(14), 0.95),
        ("CAUSED_BY", "search", "pr:417"): (se.format(8), 1.0),
        ("CAUSED_BY", "search", "service:search"): (se.format(8), 0.95),
        ("AFFECTED", "search", "service:search"): (se.format(12), 0.95),
    }


@pytest.mark.parametrize(("path", "expected"), [
    ("docs/design/cache.md", True), ("docs/rfcs/0001-x.md", True),
    ("docs/design-docs/search.md", True), ("proposals/async-payments.md", True),
    ("docs/proposals/2026/x.md", True), ("docs/adr/0001-x.md", False),
    ("docs/guides/x.md", False),
])
def test_design_document_paths(path: str, expected: bool) -> None:
    assert is_design_path(path) is expected
