"""A README or documentation page quoted for a question no family answers
(``page_quotes``): its sentences under every heading, a fenced command block as one sentence,
the composed answer citing each quote's lines, and its confidence."""

from __future__ import annotations

from dataclasses import replace

from substrate.connectors.markdown import indented_blocks
from substrate.retrieval.adr_text import Sentence, clean, sentences
from substrate.retrieval.calibration import DOCUMENTATION, calibrated
from substrate.retrieval.composers import Citations, page
from substrate.retrieval.context import Hit, StrategyResult
from substrate.retrieval.page_quotes import (
    COMMAND_BOOST,
    COMMAND_REACH,
    _candidates,
    asks_how_to,
    asks_what_it_is,
    fenced_lines,
    is_page,
    leads_to_command,
    span_lines,
    with_command,
)

README = """\
# Online Boutique

[![CI](https://example.com/badge.svg)](https://example.com)
<p align="center"><img src="logo.png"></p>

Online Boutique is a web-based e-commerce demo of eleven services.

## Contents

- [Running the tests](#running-the-tests)
- [Deploying](#deploying)

## Running the tests

Install the tools first. Then run:

```bash
# the unit tests of every service
make test_unit
```

## Deploying

- Create a cluster.
- Run skaffold run from the repository root.
"""


def test_every_heading_is_a_section_and_the_opening_is_one_too() -> None:
    found = sentences(README, 1, every_section=True)
    by_text = {s.text: s for s in found}
    opening = by_text["Online Boutique is a web-based e-commerce demo of eleven services."]
    assert (opening.section, opening.line) == ("", 6)
    assert by_text["Install the tools first."].section == "Running the tests"
    code = next(s for s in found if "make test_unit" in s.text)
    # the block is one sentence, joined to the lead-in announcing it, cited through its last
    # line; "# ..." in it is no heading
    assert code.section == "Running the tests" and code.lines() == "L15-L19"
    assert code.text == "Then run: # the unit tests of every service; make test_unit"
    deploying = [s for s in found if s.section == "Deploying"]
    assert deploying and "skaffold run" in " ".join(s.text for s in deploying)
    assert not any("img" in s.text or "badge" in s.text for s in found)  # HTML, badges
    assert not any(s.section == "Contents" or s.text.startswith("Running the tests")
                   for s in found)  # the table of contents


def test_a_block_without_a_lead_in_is_cited_from_its_first_command_to_its_last() -> None:
    found = sentences("# T\n\nSome text here for you.\n\n```\nnpm ci\nnpm test\n```\n", 1,
                      every_section=True)
    assert [(s.text, s.lines()) for s in found] == [("Some text here for you.", "L3"),
                                                    ("npm ci; npm test", "L6-L7")]


def test_the_lines_a_matched_chunk_covers() -> None:
    text = "line one\nline two\nline three\n"
    assert span_lines(text, [[0, 8], [9, 20]]) == [(1, 1), (2, 3)]


def test_an_adr_reading_keeps_its_own_sections_only() -> None:
    """Without ``every_section`` a page with no ADR section yields nothing (as before)."""
    assert sentences(README, 1) == []


def test_clean_keeps_the_underscores_of_names() -> None:
    assert clean("run `make test_unit` with _care_ and **SNAKE_CASE**") == \
        "run make test_unit with care and SNAKE_CASE"


def test_pages_are_documents_chunks_of_them_or_folders_not_adrs() -> None:
    assert is_page(Hit("doc:readme-md", "Online Boutique", "Document", "", 1.0))
    assert is_page(Hit("chunk:readme-md:0", "README.md#chunk0", "Chunk", "", 1.0))
    assert not is_page(Hit("adr:0001", "adr:0001 Use Go", "DecisionNode", "", 1.0))
    assert is_page(Hit("module:src-e2e", "e2e", "Module", "", 1.0))  # its folder's README
    assert not is_page(Hit("team:web", "web", "Team", "", 1.0))


def _fact() -> dict[str, object]:
    return {"document": {"ceid": "doc:readme-md", "name": "Online Boutique"},
            "path": "README.md", "commit": "abc1234", "scores": [0.42, 0.4],
            "quotes": [{"section": "Running the tests", "line": 12, "text": "make test_unit",
                        "evidence_ref": "README.md#L12@abc1234"},
                       {"section": "", "line": 6, "text": "A demo.",
                        "evidence_ref": "README.md#L6@abc1234"}]}


def test_the_answer_quotes_each_sentence_under_its_heading_with_its_line() -> None:
    cites = Citations()
    text = page(_fact(), cites)
    assert text == ('README.md ("Online Boutique") says: Running the tests: '
                    '"make test_unit"[1] "A demo."[2].')
    assert [c["evidence_ref"] for c in cites.items] == ["README.md#L12@abc1234",
                                                        "README.md#L6@abc1234"]


def test_a_quoted_page_is_answered_with_less_confidence_than_an_adr() -> None:
    result = StrategyResult("page_quotes", facts=[_fact()])
    confidence = calibrated("documentation", {"page_quotes": result}, "README.md says: ...")
    assert 0.0 < confidence == round(DOCUMENTATION * (0.7 + 0.6 * 0.42), 3) < 0.85


def test_how_to_questions_ask_for_instructions() -> None:
    assert asks_how_to("How do I run the tests?") and asks_how_to("how to deploy manually")
    assert asks_how_to("How can we rotate the keys?")
    assert not asks_how_to("How does checkout work?")
    assert not asks_how_to("What is our backup strategy?")


def test_the_lines_inside_fenced_blocks_are_commands() -> None:
    assert fenced_lines(README) == {18, 19}


def test_an_abbreviation_ends_no_sentence() -> None:
    found = sentences("# T\n\nRun the linters after installing (i.e. `pip install -r x.txt`). "
                      "Then commit, e.g. With git.\n", 1, every_section=True)
    assert [s.text for s in found] == [
        "Run the linters after installing (i.e. pip install -r x.txt).",
        "Then commit, e.g. With git."]


def test_a_list_item_announcing_a_command_block_is_quoted_with_it() -> None:
    """manage.get.gov's operations README: "4. run ... the sandbox you wish to create" then
    the script in a block."""
    text = ("# Ops\n\n## Creating a sandbox\n\n1. Make sure you are on main.\n"
            "2. Run the sandbox script with the name you want:\n\n```\n"
            "./ops/scripts/create_dev_sandbox.sh jd\n```\n\n3. Follow the prompts.\n")
    found = sentences(text, 1, every_section=True)
    assert [(s.text, s.lines()) for s in found] == [
        ("Make sure you are on main.", "L5"),
        ("Run the sandbox script with the name you want: ./ops/scripts/create_dev_sandbox.sh jd",
         "L6-L9"),
        ("Follow the prompts.", "L12")]


def test_a_sentence_running_on_into_a_command_block_is_its_lead_in() -> None:
    """fac's deploying guide: "... push the application with" then `cf push`."""
    text = ("# Deploying\n\n## Deploying manually\n\nAfter you have logged in, push the "
            "application with\n\n```\ncf push -f manifests/manifest-dev.yml\n```\n")
    assert [(s.text, s.lines()) for s in sentences(text, 1, every_section=True)] == [
        ("After you have logged in, push the application with "
         "cf push -f manifests/manifest-dev.yml", "L5-L8")]


def _flagged(text: str) -> list[tuple[Sentence, bool]]:
    code = fenced_lines(text)
    return [(s, bool(code.intersection(range(s.line, max(s.line, s.last) + 1))))
            for s in sentences(text, 1, every_section=True)]


def test_a_how_to_quote_goes_on_to_the_command_its_section_gives() -> None:
    """retail's load generator README: the best sentence says a script is provided; the
    command comes two sentences later in the same section, under a lead-in."""
    text = ("# Load Generator\n\n## Usage\n\n### Local\n\nA convenience script is provided to "
            "make it easier to run the load generator on your local machine.\n\n"
            "Run the following command for usage instructions:\n\n```bash\n"
            "bash scripts/run-docker.sh --help\n```\n\n### Kubernetes\n\n"
            "You can easily run the load generator as Pods.\n\n```bash\nkubectl apply -f -\n```\n")
    page = _flagged(text)
    best, command, pods, pods_command = (s for s, _ in page)
    assert [flag for _, flag in page] == [False, True, False, True]
    assert with_command([best, pods], best, page) == [best, command, pods]
    assert with_command([best, command], best, page) == [best, command]  # already there
    assert with_command([pods], pods, page[:3]) == [pods]  # no command after it
    other = [(best, False), (replace(command, section="Docker"), True)]
    assert with_command([best], best, other) == [best]  # another section's


QUICKSTART = """\
# Retail sample

## Quickstart

### Docker Compose

This deployment method will run the application on your local machine.

Pre-requisites:

- Docker installed locally

Download the Compose file and run the containers:

```
docker compose --file docker-compose.yaml up
```

### Kubernetes

This deployment method will run the application in an existing Kubernetes cluster.
"""


def test_a_sentence_leading_to_its_sections_command_is_boosted_like_one_holding_it() -> None:
    # "how do I run the application locally?": the root README's method, whose command
    # comes after its prerequisites, weighs as much as a service README's inline command
    found = _candidates({"props": {"text": QUICKSTART}}, set(), how_to=True)
    by_text = {s.text: (add, holds) for s, add, holds in found}
    method = "This deployment method will run the application on your local machine."
    assert by_text[method] == (COMMAND_BOOST, False)  # the command is 4 sentences on
    command = next(text for text in by_text if "docker compose --file" in text)
    assert by_text[command] == (COMMAND_BOOST, True)
    # the next section's sentence leads to no command: its own section has none
    cluster = "This deployment method will run the application in an existing Kubernetes cluster."
    assert by_text[cluster] == (0.0, False)
    # not a how-to question: nothing is boosted
    assert {add for _, add, _ in _candidates({"props": {"text": QUICKSTART}}, set(),
                                             how_to=False)} == {0.0}


def test_leads_to_command_looks_no_further_than_its_reach() -> None:
    line = [Sentence("Setup", k + 1, f"step {k}.") for k in range(COMMAND_REACH + 2)]
    holds = [k == COMMAND_REACH + 1 for k in range(len(line))]  # the last holds the command
    assert not leads_to_command(line, holds, 0)  # COMMAND_REACH + 1 sentences before it
    assert leads_to_command(line, holds, 1)


OLD_STYLE = """\
---
layout: default
---

## Sock Shop via Docker Compose

Install the tools:

- Install Docker

    continued list text, no code

![Sock Shop in Weave Scope](https://example.com/scope.png)

### Provision infrastructure

<!-- deploy-doc-start create-infrastructure -->

    docker-compose -f deploy/docker-compose/docker-compose.yml up -d
    docker-compose ps

<!-- deploy-doc-hidden run-tests

    docker run -td healthcheck

-->

4) `kubectl create -f manifests`
"""


def test_indented_blocks_and_inline_code_lines_are_commands() -> None:
    """Older pages give commands in indented blocks and as list items of one code span;
    a list's indented continuation, a front matter and an HTML comment's lines are none."""
    lines = OLD_STYLE.splitlines()
    assert {a + 1: b + 1 for a, b in indented_blocks(lines).items()} == {19: 20}
    assert fenced_lines(OLD_STYLE) == {19, 20, 28}
    found = sentences(OLD_STYLE, 1, every_section=True)
    by_line = {s.line: s for s in found}
    block = by_line[19]
    assert block.text == ("docker-compose -f deploy/docker-compose/docker-compose.yml up -d; "
                          "docker-compose ps") and block.lines() == "L19-L20"
    texts = " ".join(s.text for s in found)
    assert "layout" not in texts and "healthcheck" not in texts  # front matter, a comment
    assert "Weave Scope" not in texts  # a line of pictures says no sentence
    assert "continued list text" in texts  # a list item's continuation is prose


def test_a_how_to_reading_keeps_the_sentences_after_the_matched_chunk() -> None:
    """A matched chunk ending on "Create the namespace" leaves out the next chunk's command:
    a how-to question reads the sentences after it in its section as well."""
    text = ("# Installing on Minikube\n\nCreate the namespace for the shop\n\n"
            "4) `kubectl create -f manifests/00-ns.yaml`\n")
    row = {"props": {"text": text}, "spans": [[0, 60]]}  # the title and the first sentence
    how = [(s.text, holds) for s, _, holds in _candidates(row, set(), how_to=True)]
    assert how == [("Create the namespace for the shop", False),
                   ("kubectl create -f manifests/00-ns.yaml", True)]
    assert [s.text for s, _, _ in _candidates(row, set(), how_to=False)] == [
        "Create the namespace for the shop"]


def test_what_something_is_is_asked_so() -> None:
    assert asks_what_it_is("What is Sock Shop?") and asks_what_it_is("Tell me about FAC")
    assert asks_what_it_is("What does checkout do?")
    assert not asks_what_it_is("What does checkout depend on?")
    assert not asks_what_it_is("How do I run Sock Shop locally?")


def test_a_how_to_quote_holding_a_command_goes_on_to_the_next_step() -> None:
    """Robot Shop's "Run Locally": pull the images, then fire the shop up; the load is a
    third step, one beyond."""
    text = ("# Robot Shop\n\n## Run Locally\n\nJust pull down those images first using:\n\n"
            "```shell\n$ docker-compose pull\n```\n\nFire up Stan's Robot Shop with:\n\n"
            "```shell\n$ docker-compose up\n```\n\nIf you want to fire up some load as well:\n\n"
            "```shell\n$ docker-compose -f docker-compose.yaml -f load.yaml up\n```\n")
    page = _flagged(text)
    pull, up, load = (s for s, _ in page)
    assert [flag for _, flag in page] == [True, True, True]
    assert with_command([pull], pull, page) == [pull, up]
    intro = replace(pull, text="You can run it locally for testing.", line=3, last=3)
    assert with_command([intro], intro, [(intro, False), *page]) == [intro, pull, up]
    assert with_command([pull, up], pull, page) == [pull, up, load]
