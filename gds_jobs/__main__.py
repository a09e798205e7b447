"""``python -m gds_jobs {communities|pagerank|risks} [--tenant T]`` — the jobs cron runs.

Prints one JSON document: the job, tenant, snapshot version, seconds taken and the result.
Exit codes: 0 ok, 1 failure. See ``gds_jobs/crontab.example`` for a schedule.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from neo4j.exceptions import DriverError, Neo4jError

from gds_jobs.communities import run_communities, run_every_level
from gds_jobs.pagerank import service_ranks
from gds_jobs.risks import DEFAULT_LIMIT
from gds_jobs.risks_store import compute_and_store
from gds_jobs.runtime import JobContext, job_context, job_scope
from substrate.embeddings import make_embedder
from substrate.errors import BadRequest, SubstrateError, Unavailable
from substrate.retrieval.scope import ReadScope
from substrate.settings import Settings

Rows = list[dict[str, Any]]
Job = Callable[[JobContext, ReadScope, argparse.Namespace], Rows]


def communities(ctx: JobContext, scope: ReadScope, args: argparse.Namespace) -> Rows:
    """Every clearance level, or only ``--clearance`` when it is given."""
    embedder = make_embedder(ctx.settings)
    if args.clearance:
        return [c.to_dict() for c in run_communities(ctx, scope, embedder)]
    return [c.to_dict() for c in run_every_level(ctx, scope, embedder)]


def pagerank(ctx: JobContext, scope: ReadScope, args: argparse.Namespace) -> Rows:
    return [r.to_dict() for r in service_ranks(ctx, scope)]


def risks(ctx: JobContext, scope: ReadScope, args: argparse.Namespace) -> Rows:
    """Rank, store the ranking for /search (risk_rankings), print the top ``--limit``."""
    if args.limit < 1:
        raise BadRequest("limit must be at least 1", {"limit": args.limit})
    return [r.to_dict() for r in compute_and_store(ctx, scope)[: args.limit]]


JOBS: dict[str, Job] = {"communities": communities, "pagerank": pagerank, "risks": risks}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gds_jobs", description=__doc__)
    p.add_argument("job", choices=sorted(JOBS))
    p.add_argument("--tenant", help="tenant id (default: SUBSTRATE_TENANT)")
    p.add_argument("--version", type=int, help="snapshot version (default: the newest)")
    p.add_argument("--clearance", help="highest classification read (default: internal)")
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="risks: items returned")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = Settings.from_env()
    started = time.monotonic()
    try:
        scope = job_scope(settings, args.tenant or settings.tenant, args.version, args.clearance)
        with job_context(settings) as ctx:
            result = JOBS[args.job](ctx, scope, args)
    except SubstrateError as exc:
        print(json.dumps(exc.to_dict()), file=sys.stderr)
        return 1
    except (Neo4jError, DriverError, psycopg.Error) as exc:  # a part of the stack failed
        print(json.dumps(Unavailable(f"{args.job} failed: {exc}").to_dict()), file=sys.stderr)
        return 1
    print(json.dumps({"job": args.job, "tenant": scope.tenant,
                      "snapshot_version": scope.version,
                      "seconds": round(time.monotonic() - started, 3), "result": result},
                     indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
