"""``python -m gds_jobs {communities|centrality|pagerank|risks|watch} [--tenant T]`` — the
jobs cron runs, and the incremental community consumer (``watch``).

Each run holds a PostgreSQL advisory lock per (job, tenant): an overlapping run of the same
job for the same tenant does not start (exit code 75, one JSON error line on stderr). Progress
lines go to stderr; stdout gets one JSON line: the job, tenant, snapshot version, seconds
taken, the steps and the result. Exit codes: 0 ok, 1 failure, 75 another run holds the lock.
See ``gds_jobs/crontab.example`` for a schedule.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any

import psycopg
from neo4j.exceptions import DriverError, Neo4jError

from gds_jobs.centrality import run_centrality
from gds_jobs.communities import run_communities, run_every_level
from gds_jobs.guard import JobBusy, Progress, exclusive
from gds_jobs.pagerank import service_ranks
from gds_jobs.risks import DEFAULT_LIMIT
from gds_jobs.risks_store import compute_and_store
from gds_jobs.runtime import JobContext, job_context, job_scope
from substrate.embeddings import make_embedder
from substrate.errors import BadRequest, SubstrateError, Unavailable
from substrate.observability.metrics import GDS_JOB_SECONDS, write_batch_metrics
from substrate.retrieval.scope import ReadScope
from substrate.settings import Settings

Rows = list[dict[str, Any]]
Job = Callable[[JobContext, ReadScope, argparse.Namespace, Progress], Rows]
EXIT_BUSY = 75  # EX_TEMPFAIL: cron may simply try again at the next slot


def communities(ctx: JobContext, scope: ReadScope, args: argparse.Namespace,
                progress: Progress) -> Rows:
    """Every clearance level, or only ``--clearance`` when it is given."""
    embedder = make_embedder(ctx.settings)
    if args.clearance:
        return [c.to_dict() for c in run_communities(ctx, scope, embedder, progress)]
    return [c.to_dict() for c in run_every_level(ctx, scope, embedder, progress=progress)]


def centrality(ctx: JobContext, scope: ReadScope, args: argparse.Namespace,
               progress: Progress) -> Rows:
    return [m.to_dict() for m in run_centrality(ctx, scope, progress)]


def pagerank(ctx: JobContext, scope: ReadScope, args: argparse.Namespace,
             progress: Progress) -> Rows:
    return [r.to_dict() for r in service_ranks(ctx, scope)]


def risks(ctx: JobContext, scope: ReadScope, args: argparse.Namespace,
          progress: Progress) -> Rows:
    """Rank, store the ranking for /search (risk_rankings), print the top ``--limit``."""
    if args.limit < 1:
        raise BadRequest("limit must be at least 1", {"limit": args.limit})
    return [r.to_dict() for r in compute_and_store(ctx, scope, progress)[: args.limit]]


JOBS: dict[str, Job] = {"communities": communities, "centrality": centrality,
                        "pagerank": pagerank, "risks": risks}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gds_jobs", description=__doc__)
    p.add_argument("job", choices=sorted([*JOBS, "watch"]))
    p.add_argument("--tenant", help="tenant id (default: SUBSTRATE_TENANT)")
    p.add_argument("--version", type=int, help="snapshot version (default: the newest)")
    p.add_argument("--clearance", help="highest classification read (default: internal)")
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="risks: items returned")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = Settings.from_env()
    if args.job == "watch":
        from gds_jobs.managed import watch

        return watch(settings, args.tenant, quiet=args.quiet)
    started = time.monotonic()
    progress = Progress(args.job, quiet=args.quiet)
    tenant = args.tenant or settings.tenant
    code = 1
    try:
        code = _run(settings, args, progress, tenant, started)
    finally:
        record_duration(settings, args.job, code, time.monotonic() - started)
    return code


def record_duration(settings: Settings, job: str, code: int, seconds: float) -> None:
    """substrate_gds_job_seconds{job, status}, left in $SUBSTRATE_HOME/metrics for /metrics."""
    status = {0: "ok", EXIT_BUSY: "busy"}.get(code, "failed")
    GDS_JOB_SECONDS.labels(job, status).observe(seconds)
    with suppress(OSError):
        write_batch_metrics(settings.home, f"gds-{job}")


def _run(settings: Settings, args: argparse.Namespace, progress: Progress, tenant: str,
         started: float) -> int:
    try:
        with exclusive(settings, args.job, tenant):
            scope = job_scope(settings, tenant, args.version, args.clearance)
            progress("locked", tenant=tenant, snapshot_version=scope.version)
            with job_context(settings) as ctx:
                result = JOBS[args.job](ctx, scope, args, progress)
    except JobBusy as exc:
        print(json.dumps(exc.to_dict()), file=sys.stderr)
        return EXIT_BUSY
    except SubstrateError as exc:
        print(json.dumps(exc.to_dict()), file=sys.stderr)
        return 1
    except (Neo4jError, DriverError, psycopg.Error) as exc:  # a part of the stack failed
        print(json.dumps(Unavailable(f"{args.job} failed: {exc}").to_dict()), file=sys.stderr)
        return 1
    print(json.dumps({"job": args.job, "tenant": scope.tenant,
                      "snapshot_version": scope.version,
                      "seconds": round(time.monotonic() - started, 3),
                      "steps": progress.steps, "result": result}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
