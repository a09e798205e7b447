"""Questions on a repository shaped like rubyforgood/casa (a Rails application): a record
written as prose under its title, with no Context or Decision heading, answers why questions
about it (the next record answered before); a numbered record with no file extension is a
record; the README's description is its first sentence past more badges than a paragraph's
600 characters (a cut badge was taken for the description); the project answers to the name
that sentence gives it; a security policy is read. Gold lines read from the files written
here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from substrate.settings import Settings
from tests.support.repo_tenant import ask, repo_tenant

pytestmark = pytest.mark.integration

BADGE = ("[![{0}](https://github.com/example/casa/workflows/{0}/badge.svg)]"
         "(https://github.com/example/casa/actions/workflows/{0}.yml)\n")
README = ("# CASA Project and Organization Overview\n\n"
          + "".join(BADGE.format(n) for n in ("rspec", "cypress", "erb-lint", "standardrb",
                                               "brakeman", "yarn-lint", "codeql"))
          + "\nCASA (Court Appointed Special Advocate) is a role fulfilled by a trained "
            "volunteer who advocates for a youth in foster care.\n")
PROSE = """\
# 6. System tests are preferred over controller tests
Date: 2021-07-14


System tests exercise the erb and the controller at the same time; they are slower.

In general, we don't write many controller tests because they rely on mocking and duplicate
the system tests.
"""
BARE = """\
# 2. Disallow user sign-ups from the UI

## Context

We don't want random people signing up and spamming us.

## Decision

We are going to disable Devise registrations; admins invite users.
"""
OTHER = """\
# 3. Having 2 user tables

## Context

There will be multiple CASA orgs in the system, and admins of all of them.

## Decision

We will keep two user tables.
"""
SECURITY = """\
# Security Policy

## Reporting a Vulnerability

Please report a vulnerability by opening a private advisory on the repository.
"""
ADRS = "doc/architecture-decisions"


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    files = {"README.md": README, f"{ADRS}/0006-few-controller-tests.md": PROSE,
             f"{ADRS}/0002-disallow-ui-sign-ups": BARE,
             f"{ADRS}/0003-multiple-user-tables.md": OTHER, "doc/SECURITY.md": SECURITY}
    with repo_tenant(stack, tmp_path_factory.mktemp("casa"), "t-casa", files) as name:
        yield name


def test_a_record_written_as_prose_answers_for_itself(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "Why are system tests preferred over controller tests?")
    answer = body["answer"]
    assert answer.startswith('adr:0006 "System tests are preferred over controller tests"'), \
        answer
    assert "mocking" in answer and "Date:" not in answer and ' : "' not in answer
    refs = [c["evidence_ref"] for c in body["citations"]]
    assert any(r.startswith(f"{ADRS}/0006-few-controller-tests.md#L") for r in refs), refs


def test_a_record_file_with_no_extension_is_a_record(stack: Settings, tenant: str) -> None:
    answer = ask(stack, tenant, "Why are sign-ups not allowed in the UI?")["answer"]
    assert answer.startswith('adr:0002 "Disallow user sign-ups from the UI"'), answer
    assert "spamming" in answer


def test_the_project_is_named_by_its_readmes_opening_sentence(
        stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "What is CASA?")
    assert body["answer"].startswith(
        'README.md ("CASA Project and Organization Overview") says: "CASA (Court Appointed '
        'Special Advocate) is a role'), body["answer"]
    assert body["citations"][0]["evidence_ref"].startswith("README.md#L11@")


def test_a_security_policy_is_read(stack: Settings, tenant: str) -> None:
    answer = ask(stack, tenant, "How do I report a vulnerability?")["answer"]
    assert answer.startswith('doc/SECURITY.md ("Security Policy") says: Reporting a '
                             'Vulnerability: "Please report a vulnerability by opening a '
                             'private advisory'), answer
