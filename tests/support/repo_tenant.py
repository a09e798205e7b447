"""A tenant holding one small git repository written by a test, and questions to it through
the gateway: the set-up several integration tests share."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from substrate.connectors.git_ingest import ingest_git
from substrate.db import neo4j_driver
from substrate.demo.gitwriter import commit_tree, init_repo
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from tests.support.gateway_client import gateway


@contextmanager
def repo_tenant(stack: Settings, folder: Path, prefix: str, files: dict[str, str],
                when: str = "2025-01-01T00:00:00Z") -> Iterator[str]:
    """A new tenant ``<prefix>-<random>`` with ``files`` committed once and ingested; its
    nodes are deleted afterwards."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    repo = init_repo(folder / "repo")
    commit_tree(repo, files, "files", when)
    driver = neo4j_driver(stack)
    try:
        ingest_git(GraphWriter(stack, driver), repo, tenant=name, progress=lambda _: None)
        yield name
    finally:
        for label in ("Entity", "Chunk"):
            driver.execute_query(f"MATCH (n:{label} {{tenant_id: $t}}) DETACH DELETE n", t=name)
        driver.close()


def ask(stack: Settings, tenant: str, question: str) -> dict[str, Any]:
    """``POST /search`` of ``question`` as ``tenant``; the body of its 200."""
    with gateway(stack, headers={"X-Tenant": tenant}) as api:
        response = api.post("/search", json={"query": question})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def cited(body: dict[str, Any]) -> list[str]:
    """The evidence refs an answer's citations give, in order."""
    citations = body["citations"]
    assert isinstance(citations, list)
    return [str(c["evidence_ref"]) for c in citations]


def assert_cited(body: dict[str, Any], *lines: str) -> None:
    """Each of ``lines`` (``path#Lline``) is cited by the answer, at whatever commit."""
    refs = cited(body)
    for line in lines:
        assert any(r.startswith(f"{line}@") for r in refs), (line, refs)
