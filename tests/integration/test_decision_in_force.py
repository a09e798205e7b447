"""Decision questions on records named like alphagov/gsp's (``ADR012-docker-image-
repositories.md``): why we moved away from what a superseded record decided is answered by the
record that superseded it; a record's status question is a decision question (not an
address question for "to host"); link definitions at a record's foot are no sentences; and
the records' paths stand in the citations as written (a numbered word in a path was taken for
a secret token and masked). Gold lines read from the files written here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from substrate.settings import Settings
from tests.support.repo_tenant import ask, repo_tenant

pytestmark = pytest.mark.integration

OLD = """\
# ADR012: Docker image repositories

## Status

Superseded by [ADR028](ADR028-container-tools.md)

## Context

Artefacts that we build must be published somewhere a Kubernetes cluster can pull them from.
Multiple options exist, including [Docker Hub] and a registry of our cloud vendor.

## Decision

We will use AWS ECR as our Docker image repository, hosted beside our clusters.

## Consequences

Images must not contain sensitive data even in a private repository.

[Docker Hub]: https://hub.docker.com/
"""
NEW = """\
# ADR028: Container Tools

## Status

Accepted

Supersedes [ADR012](ADR012-docker-image-repositories.md)

## Context

ECR does not serve public images, offers no Docker Content Trust and scans no images for
vulnerabilities, which our users need.

## Decision

We will run our own registry with Docker Distribution, Notary and Clair instead of ECR.
"""
LOCAL = """\
# ADR018: GSP Local Development Environment

## Status

Accepted

## Context

Teams using GSP need to develop and test applications on local hardware.

## Decision

We will provide a way to run a full GSP compatible stack locally on a developer machine.
"""
ADRS = "docs/architecture/adr"


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    files = {f"{ADRS}/ADR012-docker-image-repositories.md": OLD,
             f"{ADRS}/ADR028-container-tools.md": NEW,
             f"{ADRS}/ADR018-local-development-environment.md": LOCAL,
             "README.md": "# GSP\n\nGSP is a Kubernetes distribution for digital services.\n"}
    with repo_tenant(stack, tmp_path_factory.mktemp("gsp"), "t-inforce", files) as name:
        yield name


def test_moving_away_from_a_decision_is_answered_by_the_record_that_replaced_it(
        stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "Why did we move away from ECR?")
    answer = body["answer"]
    assert answer.startswith('adr:0028 "Container Tools"'), answer
    assert "Content Trust" in answer or "Notary" in answer
    refs = [c["evidence_ref"] for c in body["citations"]]
    assert any(r.startswith(f"{ADRS}/ADR028-container-tools.md#L") for r in refs), refs
    assert "REDACTED" not in answer and not any("REDACTED" in r for r in refs)


def test_why_the_old_decision_was_made_is_still_the_old_record(
        stack: Settings, tenant: str) -> None:
    answer = ask(stack, tenant, "Why did we choose AWS ECR for Docker images?")["answer"]
    assert answer.startswith('adr:0012 "Docker image repositories"'), answer
    assert "hub.docker.com" not in answer  # the link definition at its foot is no sentence


def test_a_records_status_is_a_decision_question(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "What is the status of the decision to host images on ECR?")
    assert body["route"]["intent"] == "decision_rationale", body["route"]
    assert "superseded" in body["answer"], body["answer"]


def test_what_the_project_is_comes_from_its_readme_before_a_record_naming_it(
        stack: Settings, tenant: str) -> None:
    """"What is GSP?": ADR 18's title says GSP too, and a record matching first used to
    answer; the question names the project (the README's title), whose README answers."""
    answer = ask(stack, tenant, "What is GSP?")["answer"]
    assert answer.startswith('README.md ("GSP") says: "GSP is a Kubernetes distribution for '
                             'digital services."'), answer
