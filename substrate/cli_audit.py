"""``substrate audit evidence``: do the evidence refs of git-sourced edges resolve?

Prints one JSON object (per source: refs, resolved, share, failure reasons, examples) and exits
0 when every ref resolves, 1 when some do not, 2 on bad input (no checkout, unknown source).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from substrate.settings import Settings

EXIT_OK, EXIT_UNRESOLVED, EXIT_INPUT = 0, 1, 2


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_INPUT


def cmd_audit(settings: Settings, args: argparse.Namespace) -> int:
    from substrate.connectors.evidence_audit import GitError, audit_edges, check_repo, source_of
    from substrate.cypher import CypherLibrary
    from substrate.db import neo4j_driver

    tenant = args.tenant or settings.tenant
    repos = [Path(p) for p in args.repo or []]
    for repo in repos:
        try:
            check_repo(repo)
        except (GitError, FileNotFoundError, NotADirectoryError):
            return _fail(f"{repo} is not a git checkout")
    library = CypherLibrary.load()
    driver = neo4j_driver(settings)
    try:
        def read(name: str, **params: Any) -> list[dict[str, Any]]:
            records, _, _ = driver.execute_query(library.text(name), params, routing_="r")
            return [r.data() for r in records]

        sources = {r["source"]: r["edges"] for r in read("temporal/evidence_sources",
                                                         tenant=tenant)}
        if not repos:
            named = ", ".join(sources) or "none"
            return _fail(f"name the checkout(s) to audit with --repo PATH "
                         f"(git sources of tenant {tenant}: {named})")
        reports = []
        for repo in repos:
            source = source_of(repo)
            if source not in sources:
                return _fail(f"tenant {tenant} holds no edges from {source} "
                             f"(its git sources: {', '.join(sources) or 'none'})")
            for src in (source, f"{source}:renames"):  # rename links of the replay too
                if src in sources:
                    edges = read("temporal/evidence_edges", tenant=tenant, source=src)
                    reports.append(audit_edges(repo, src, edges))
    finally:
        driver.close()
    refs = sum(r.refs for r in reports)
    resolved = sum(r.resolved for r in reports)
    print(json.dumps({"tenant": tenant, "refs": refs, "resolved": resolved,
                      "share": round(resolved / refs, 6) if refs else 1.0,
                      "sources": [r.as_dict() for r in reports]}, indent=2))
    return EXIT_OK if resolved == refs else EXIT_UNRESOLVED


def add_audit_commands(sub: Any) -> None:
    p = sub.add_parser("audit", help="audit the graph against its sources: evidence")
    p.add_argument("what", choices=["evidence"])
    p.add_argument("--tenant", help="tenant to audit (default: TENANT)")
    p.add_argument("--repo", action="append",
                   help="git checkout whose replay is audited (repeatable)")
    p.set_defaults(handler=cmd_audit)
