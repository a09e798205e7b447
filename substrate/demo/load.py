"""Load the demo organisation through the real connectors (idempotent: a second run makes
no snapshot). The git repository is built deterministically into the state directory, its
history replayed commit by commit; the non-repository facts come from ``org.jsonl``."""

from __future__ import annotations

from pathlib import Path

from gds_jobs import risks_store
from gds_jobs.communities import run_every_level
from gds_jobs.community_store import has_set
from gds_jobs.runtime import job_context, job_scope
from substrate.connectors.enrich import enrich
from substrate.connectors.git_ingest import ingest_git
from substrate.connectors.history import list_commits
from substrate.connectors.jsonl_ingest import ingest_jsonl
from substrate.db import neo4j_driver
from substrate.demo.build_repo import build_demo_repo
from substrate.embeddings import TextEmbedder, make_embedder
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from substrate.stack.part import Progress, _print

ORG_JSONL = Path(__file__).resolve().parent / "org.jsonl"


def demo_repo(settings: Settings) -> Path:
    repo = settings.home / "demo" / "acme-shop"
    if not (repo / ".git").exists():
        repo.parent.mkdir(parents=True, exist_ok=True)
        build_demo_repo(repo)
    return repo


def run_jobs(settings: Settings, embedder: TextEmbedder, progress: Progress = _print) -> None:
    """The GDS jobs at the demo's newest snapshot, each only when its results are not stored
    for that snapshot yet (a levels group that sees the same graph runs once: gds_jobs.levels)."""
    scope = job_scope(settings, settings.tenant)
    if not has_set(settings, settings.tenant, scope.version):
        progress("[demo] Leiden community summaries (global GraphRAG, every clearance)")
        with job_context(settings) as ctx:
            run_every_level(ctx, scope, embedder)
    if not risks_store.has_ranking(settings, settings.tenant, scope.version):
        progress("[demo] ranking architectural risks (GDS risks job, every clearance)")
        with job_context(settings) as ctx:
            risks_store.store_every_level(ctx, settings.tenant)


def load_demo(settings: Settings, progress: Progress = _print) -> list[int]:
    """Returns the snapshot versions this run created (empty when already loaded)."""
    repo = demo_repo(settings)
    driver = neo4j_driver(settings)
    try:
        embedder = make_embedder(settings)
        writer = GraphWriter(settings, driver, embedder)
        progress(f"[demo] replaying the history of {repo}")
        results = ingest_git(writer, repo, history=True, progress=progress)
        last = list_commits(repo)[-1].when
        results += ingest_jsonl(
            writer,
            ORG_JSONL,
            source="jsonl:acme-org",
            valid_at=last,
            resume=False,
            progress=progress,
        )
        made = [r.snapshot_version for r in results if r.snapshot_version]
        if made:
            enriched = enrich(writer, settings.tenant, progress=progress)
            if enriched is not None and enriched.snapshot_version:
                made.append(enriched.snapshot_version)
        run_jobs(settings, embedder, progress)
    finally:
        driver.close()
    progress(f"[demo] {len(made)} new snapshot(s)" if made else "[demo] already loaded")
    return made
