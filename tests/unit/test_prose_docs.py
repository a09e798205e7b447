"""Prose documentation as Documents: the root README (also the Repository's description),
pages under ``docs/``, READMEs of other folders (a service's or module's named by its path);
never changelogs, licences or vendored trees; and the history replay watches them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from substrate.connectors.designdocs import is_prose_path, prose_kind
from substrate.connectors.gitrepo import batch_at
from substrate.connectors.path_filter import is_read, is_relevant
from substrate.demo.gitwriter import commit_tree, init_repo
from substrate.retrieval.nl_cypher.lexicon import entity_phrases
from substrate.retrieval.nl_cypher.parser import Schema, parse

ROOT_README = """\
# Acme Shop

[![CI](https://ci.example.com/badge.svg)](https://ci.example.com)

Acme Shop is the online store of Acme: a checkout service and the tools around it.

## Services

See `services/`.
"""

DEPLOYING = """\
# Deploying

The checkout service is deployed with Terraform; its state lives in the `acme-tf` bucket.
"""


def _repo(tmp_path: Path) -> tuple[Path, str]:
    repo = init_repo(tmp_path / "repo")
    files = {
        "README.md": ROOT_README,
        "docs/guide/deploying.md": DEPLOYING,
        "docs/design/cache.md": "# Cache\n\nThe checkout service caches carts.\n",
        "docs/adr/0001-use-postgres.md": "# 1. Use Postgres\n\n## Status\n\nAccepted\n",
        "services/checkout/README.md": "# checkout\n\nTakes the payment.\n",
        "services/checkout/main.py": "print()\n",
        "tools/migrate/README.md": "Moves data between the checkout databases.\n",
        "CHANGELOG.md": "# Changelog\n\n- checkout: faster\n",
        "docs/LICENSE.md": "MIT\n",
        "node_modules/x/README.md": "# x\n\nA package.\n",
    }
    return repo, commit_tree(repo, files, "init", "2026-08-03T09:00:00Z")[:7]


def test_root_readme_docs_pages_and_other_readmes_are_documents(tmp_path: Path) -> None:
    repo, sha = _repo(tmp_path)
    batch = batch_at(repo)
    docs = {n.props["path"]: n for n in batch.nodes if n.label == "Document"}
    assert sorted(docs) == ["README.md", "docs/design/cache.md", "docs/guide/deploying.md",
                            "services/checkout/README.md", "tools/migrate/README.md"]
    assert {p: n.props["kind"] for p, n in docs.items()} == {
        "README.md": "readme", "docs/design/cache.md": "design",
        "docs/guide/deploying.md": "doc", "services/checkout/README.md": "readme",
        "tools/migrate/README.md": "readme"}
    assert docs["README.md"].ceid == "doc:readme-md"
    assert docs["docs/guide/deploying.md"].props["name"] == "Deploying"
    assert docs["tools/migrate/README.md"].props["name"] == "tools/migrate/README.md"  # no title
    mentions = {(e.src, e.dst) for e in batch.edges if e.type == "MENTIONS"}
    assert ("doc:docs-guide-deploying-md", "service:checkout") in mentions
    # the service folder's README describes the service; its Document (quoted for how-to
    # questions) is named by its path: "# checkout" names the service
    service = next(n for n in batch.nodes if n.ceid == "service:checkout")
    assert service.props["description"] == "Takes the payment."
    assert docs["services/checkout/README.md"].props["name"] == "services/checkout/README.md"


def test_the_repository_is_described_by_its_root_readme(tmp_path: Path) -> None:
    repo, sha = _repo(tmp_path)
    node = next(n for n in batch_at(repo).nodes if n.label == "Repository")
    text = "Acme Shop is the online store of Acme: a checkout service and the tools around it."
    assert node.props["description"] == text  # the badge line passed over
    assert node.props["attribute_refs"] == [f"description|{text}|README.md#L5@{sha}"]


def test_a_lowercase_root_readme_describes_too(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {"readme.md": "# x\n\nStores the shop's invoices.\n"}, "init",
                "2026-08-03T09:00:00Z")
    batch = batch_at(repo)
    node = next(n for n in batch.nodes if n.label == "Repository")
    assert node.props["description"] == "Stores the shop's invoices."
    assert [n.props["kind"] for n in batch.nodes if n.label == "Document"] == ["readme"]


@pytest.mark.parametrize(("path", "expected"), [
    ("README.md", True), ("readme.md", True), ("README.markdown", True),
    ("docs/guide/deploying.md", True), ("doc/run-book.md", True),
    ("documentation/infra-overview.markdown", True), ("tools/migrate/README.md", True),
    ("docs/design/cache.md", False),  # a design document already
    ("docs/adr/0001-x.md", False), ("docs/postmortems/2026-01-02-db.md", False),
    ("CHANGELOG.md", False), ("docs/LICENSE.md", False), ("docs/CODE_OF_CONDUCT.md", False),
    # a security policy and a contributing guide answer questions (how to report a
    # vulnerability, how to run the tests); a root page other than the README is not read
    ("docs/CONTRIBUTING.md", True), ("doc/SECURITY.md", True), ("SECURITY.md", False),
    ("docs/adr/template.md", False), ("docs/pull_request_template.md", False),
    ("docs/templates.md", True),
    ("node_modules/x/README.md", False), ("vendor/github.com/x/README.md", False),
    (".github/actions/x/README.md", False), ("docs/setup.txt", False), ("notes.md", False),
    ("src/app/guide.md", False), ("backend/fixtures/x/README.md", False),
])
def test_prose_paths(path: str, expected: bool) -> None:
    assert is_prose_path(path) is expected


def test_prose_kinds() -> None:
    assert [prose_kind(p) for p in ("README.md", "docs/README.md", "tools/README.md")] == [
        "readme", "doc", "readme"]


def test_a_prose_page_alone_does_not_make_a_commit_replayed() -> None:
    """A history replay reads the prose pages at its last commit only (replay_parse), so an
    edit of one alone is no reason to parse a commit; the root README still is (its table of
    services)."""
    assert not is_relevant(("M", "docs/x.md")) and not is_relevant(("A", "docs/guide/a.md"))
    assert is_relevant(("M", "README.md"))
    assert not is_read("CHANGELOG.md") and not is_read("node_modules/x/guide.md")


def test_a_replay_reads_the_prose_pages_at_its_last_commit_only(tmp_path: Path) -> None:
    from substrate.connectors.replay_parse import HistoryParser
    repo = init_repo(tmp_path / "repo")
    compose = "services:\n  api:\n    image: example/api:{}\n"
    shas = [commit_tree(repo, {"docker-compose.yml": compose.format(1),
                               "docs/guide.md": "# Guide\n\nHow we deploy api.\n"},
                        "one", "2026-08-03T09:00:00Z"),
            commit_tree(repo, {"docker-compose.yml": compose.format(2),
                               "docs/guide.md": "# Guide\n\nHow we deploy api now.\n"},
                        "two", "2026-08-04T09:00:00Z"),
            commit_tree(repo, {"docker-compose.yml": compose.format(2),
                               "docs/guide.md": "# Guide\n\nHow we deploy api today.\n"},
                        "three", "2026-08-05T09:00:00Z")]
    for path_filter in (True, False):
        outcomes = list(HistoryParser(repo, shas, path_filter).outcomes())
        docs = [[n.ceid for n in o.batch.nodes if n.label == "Document"] if o.batch else None
                for o in outcomes]
        assert docs == [[], [], ["doc:docs-guide-md"]], (path_filter, docs)
        last = next(n for n in outcomes[-1].batch.nodes if n.ceid == "doc:docs-guide-md")
        assert "today" in str(last.props["text"])


def test_design_docs_are_documents_of_kind_design_in_questions() -> None:
    """"design docs" no longer counts every README and docs page; "documents" still does."""
    schema = Schema(frozenset(), entity_phrases([]))
    now = datetime(2026, 11, 22, tzinfo=UTC)
    design = parse("How many design docs are there?", schema, now)
    assert (design.subject.labels, design.params) == (("Document",), {"p0": "design"})
    assert parse("How many documents are there?", schema, now).params == {}


def test_a_decision_logs_index_is_not_a_document() -> None:
    """docs/adr/README.md lists the records' titles and statuses: the records answer."""
    assert not is_prose_path("docs/adr/README.md")
    assert not is_prose_path("architecture-decision-record/README.md")
    assert is_prose_path("docs/README.md")


def test_a_windows_chunk_changes_come_after_every_other_change() -> None:
    """A README edited in the window re-cuts its passages: those chunk changes must not push
    a changed dependency out of the listed changes (retail-store's February 2025)."""
    from substrate.retrieval.strategies_facts import _rank
    chunk = {"kind": "node", "id": "chunk:readme-md:3", "label": "Chunk", "change": "removed"}
    has = {"kind": "edge", "id": "doc:readme-md-[HAS_CHUNK]->chunk:readme-md:3@git",
           "type": "HAS_CHUNK", "change": "removed"}
    changed = {"kind": "edge", "id": "service:ui-[CALLS]->service:catalog@git",
               "type": "CALLS", "change": "changed"}
    prop = {"kind": "node", "id": "service:ui", "label": "Service", "change": "changed"}
    assert sorted([chunk, has, changed, prop], key=_rank)[:2] == [changed, prop]
