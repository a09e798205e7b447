"""History replay with the path filter yields the graph of a full replay (issue 12, part 3).

A window of retail-store-sample-app (../shared/devset, its first 158 first-parent commits, up
to 2023-04-01) is replayed twice with the same code into two tenants: with the path filter
(first, so git blame starts cold and reuses blames across skipped commits) and without it.
Both must hold the same nodes (labels, properties, validity times, interval counts), the
same relationships (type, ends, evidence, properties, validity times) and the same
snapshots (real-world times, change counts, content hashes); the filter must have skipped
commits, and every commit of the window is recorded as replayed in both.

A second window, of fac (2026-07-20 to 2026-08-10, 22 commits), checks the same for source
code, which the filter parses only where a changed file's text names a peer: there
``backend/config/settings.py`` takes RustFS's address as a default (commit 2a6d8ba).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from neo4j import Driver

from substrate.connectors.git_ingest import ingest_git
from substrate.connectors.history import list_commits
from substrate.connectors.path_filter import (
    content_hits,
    is_read,
    is_relevant,
    needed_commits,
)
from substrate.graph.writer import CommitResult, GraphWriter
from substrate.settings import Settings
from tests.support import devset
from tests.support.graphstate import drop_tenant_graph, new_tenant

pytestmark = pytest.mark.integration

UNTIL = "2023-04-01"
# version numbers are global (they differ between the two tenants): compare times instead
VOLATILE = {"tenant_id", "valid_from_v", "valid_to_v", "iv_from", "iv_to", "embedding"}

NODES = (
    "MATCH (n {tenant_id: $t}) RETURN n.ceid AS ceid, labels(n) AS labels, "
    "properties(n) AS p, size(n.iv_from) AS intervals"
)
EDGES = (
    "MATCH (a {tenant_id: $t})-[r]->(b) RETURN a.ceid AS src, type(r) AS type, b.ceid AS dst, "
    "properties(r) AS p"
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return devset.clone("retail-store-sample-app", tmp_path_factory.mktemp("devset"))


def _clean(props: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in props.items() if k not in VOLATILE))


def nodes(driver: Driver, tenant: str) -> set[tuple[Any, ...]]:
    rows, _, _ = driver.execute_query(NODES, t=tenant)
    return {(r["ceid"], tuple(sorted(r["labels"])), _clean(r["p"]), r["intervals"])
            for r in rows}


def edges(driver: Driver, tenant: str) -> set[tuple[Any, ...]]:
    rows, _, _ = driver.execute_query(EDGES, t=tenant)
    return {(r["src"], r["type"], r["dst"], _clean(r["p"])) for r in rows}


def snapshots(pg: psycopg.Connection[Any], tenant: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in pg.execute(
        "SELECT valid_at, source, content_hash, changed_nodes, changed_edges, note "
        "FROM snapshots WHERE tenant_id = %s ORDER BY version", (tenant,)).fetchall()]


def replayed(pg: psycopg.Connection[Any], tenant: str) -> set[str]:
    rows = pg.execute("SELECT sha FROM ingested_commits WHERE tenant_id = %s", (tenant,))
    return {str(r[0]) for r in rows.fetchall()}


@pytest.fixture(scope="module")
def replays(stack: Settings, driver: Driver, repo: Path
            ) -> Iterator[dict[bool, tuple[str, list[CommitResult]]]]:
    out: dict[bool, tuple[str, list[CommitResult]]] = {}
    for path_filter in (True, False):
        tenant = new_tenant(f"replay-{'filtered' if path_filter else 'full'}")
        results = ingest_git(GraphWriter(stack, driver, embedder=None), repo, history=True,
                             until=UNTIL, tenant=tenant, progress=lambda _m: None,
                             path_filter=path_filter)
        out[path_filter] = (tenant, results)
    yield out
    for tenant, _ in out.values():
        drop_tenant_graph(driver, tenant)


def test_the_filter_skips_commits_that_touch_nothing_read(repo: Path) -> None:
    shas = [c.sha for c in list_commits(repo, until=UNTIL)]
    parse = needed_commits(repo, shas)
    assert shas[0] in parse
    assert 0 < len(parse) < len(shas) // 2


def test_same_graph_with_and_without_the_filter(
    driver: Driver, replays: dict[bool, tuple[str, list[CommitResult]]],
) -> None:
    (filtered, _), (full, _) = replays[True], replays[False]
    full_nodes, full_edges = nodes(driver, full), edges(driver, full)
    assert len(full_nodes) > 10 and len(full_edges) > 10
    assert nodes(driver, filtered) == full_nodes
    assert edges(driver, filtered) == full_edges
    assert all(dict(e[3]).get("evidence_ref") for e in full_edges)


def test_same_snapshots_and_every_commit_recorded(
    pg: psycopg.Connection[Any], repo: Path,
    replays: dict[bool, tuple[str, list[CommitResult]]],
) -> None:
    (filtered, with_filter), (full, without) = replays[True], replays[False]
    assert snapshots(pg, filtered) == snapshots(pg, full)
    assert len(snapshots(pg, full)) >= 3
    assert [r.snapshot_version is None for r in with_filter] == [
        r.snapshot_version is None for r in without]
    assert [r.content_hash for r in with_filter] == [r.content_hash for r in without]
    shas = {c.sha for c in list_commits(repo, until=UNTIL)}
    assert replayed(pg, filtered) == replayed(pg, full) == shas


def test_paths_the_connectors_read() -> None:
    read = ["docker-compose.yml", "src/cart/chart/values.yaml", ".github/CODEOWNERS",
            "docs/adr/0002-use-kafka.md", "docs/postmortems/2026-01-02-outage.md",
            "docs/design/search.md", "services/cart/main.go", "deploy/.env",
            "src/app/compose.tracing.yaml", "README.md"]  # its service table
    unread = ["src/README.txt", ".github/workflows/ci.yml", "docs/guide.md", "Makefile"]
    assert [p for p in read if not is_read(p)] == []
    assert [p for p in unread if is_read(p)] == []
    # source code: read by its path, and a change counts where its text names a peer
    for path in ("src/cart/main.go", "src/ui/static/app.js"):
        assert is_read(path) and not is_relevant(("M", path), hits=frozenset())


FAC_SINCE, FAC_UNTIL = "2026-07-20", "2026-08-10"


@pytest.fixture(scope="module")
def fac_replays(stack: Settings, driver: Driver, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[tuple[Path, dict[bool, str]]]:
    fac = devset.clone("fac", tmp_path_factory.mktemp("devset-fac"))
    out: dict[bool, str] = {}
    for path_filter in (True, False):
        tenant = new_tenant(f"replay-fac-{'filtered' if path_filter else 'full'}")
        ingest_git(GraphWriter(stack, driver, embedder=None), fac, history=True,
                   since=FAC_SINCE, until=FAC_UNTIL, tenant=tenant,
                   progress=lambda _m: None, path_filter=path_filter)
        out[path_filter] = tenant
    yield fac, out
    for tenant in out.values():
        drop_tenant_graph(driver, tenant)


def test_same_graph_where_source_code_names_peers(
    driver: Driver, pg: psycopg.Connection[Any], fac_replays: tuple[Path, dict[bool, str]],
) -> None:
    fac, tenants = fac_replays
    shas = [c.sha for c in list_commits(fac, since=FAC_SINCE, until=FAC_UNTIL)]
    parse = needed_commits(fac, shas)
    hits = content_hits(fac)
    named = [s for s in shas[1:] if hits.get(s)]
    assert named and set(named) <= parse and len(parse) < len(shas)
    filtered, full = tenants[True], tenants[False]
    full_edges = edges(driver, full)
    assert any(dict(e[3]).get("via") == "'source_code'" for e in full_edges)
    assert edges(driver, filtered) == full_edges
    assert nodes(driver, filtered) == nodes(driver, full)
    assert snapshots(pg, filtered) == snapshots(pg, full)
