"""Latency the /cypher scope checks add per call: the grammar parse + allow-lists + rewrite
(``cypher_scope.scope_query``, in process) and the EXPLAIN of the rewritten query + plan walk
(``cypher_plan``, one round trip to Neo4j), p50/p95 over ``REPEATS`` runs of a mix of
queries; beside them the raw query run unscoped, for scale. The first (cold) parse, which
loads the grammar, is reported apart.

Run: ``.substrate/venv/bin/python -m tests.bench.bench_cypher_scope``; needs ``substrate up``.
Writes ``$SUBSTRATE_HOME/bench/cypher_scope.json`` and prints the figures.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from neo4j import GraphDatabase

from substrate.retrieval.cypher_plan import check_plan
from substrate.retrieval.cypher_scope import scope_parameters, scope_query
from substrate.retrieval.scope import ReadScope
from substrate.settings import Settings
from tests.bench.stats import latency

REPEATS = 30
QUERIES = [
    "MATCH (n:Service) RETURN n.ceid AS id ORDER BY id LIMIT 10",
    "MATCH (s:Service {ceid: $id})-[r:CALLS]->(t:Service) RETURN t.ceid, r.evidence_ref",
    "MATCH p = (s:Service {ceid: $id})-[:CALLS|DEPENDS_ON*1..3]->(t) RETURN length(p), t.ceid",
    "MATCH (n:Service) RETURN n.ceid, COUNT { (n)<-[:CALLS]-() } AS callers, "
    "[(n)<-[:OWNS]-(o) | o.ceid] AS owners ORDER BY callers DESC LIMIT 5",
    "MATCH (a:Service)-[:CALLS]->(b) WITH b, count(a) AS c RETURN b.ceid, c "
    "UNION MATCH (t:Team) RETURN t.ceid AS `b.ceid`, 0 AS c",
]


def percentiles(samples: list[float]) -> dict[str, float | int | None]:
    return latency(samples)


def main() -> int:
    logging.disable(logging.WARNING)
    settings = Settings.from_env()
    started = time.perf_counter()
    scope_query(QUERIES[0])
    cold_ms = (time.perf_counter() - started) * 1000
    scope = ReadScope("acme", 2**53 - 2, ("public", "internal"), pinned=True)
    params: dict[str, Any] = {"id": "service:checkout", **scope_parameters(scope)}
    rewrite, explain, raw = [], [], []
    driver = GraphDatabase.driver(settings.neo4j_uri,
                                  auth=(settings.neo4j_user, settings.neo4j_password),
                                  notifications_min_severity="OFF")
    with driver:
        for _ in range(REPEATS):
            for q in QUERIES:
                t0 = time.perf_counter()
                scoped = scope_query(q, params)
                t1 = time.perf_counter()
                with driver.session(default_access_mode="READ") as session:
                    summary = session.run("EXPLAIN " + scoped.text, params).consume()
                check_plan(summary.plan, summary.query_type)
                t2 = time.perf_counter()
                with driver.session(default_access_mode="READ") as session:
                    session.run(q, params).consume()
                t3 = time.perf_counter()
                rewrite.append((t1 - t0) * 1000)
                explain.append((t2 - t1) * 1000)
                raw.append((t3 - t2) * 1000)
    out = {"cold_parse_ms": round(cold_ms, 1), "parse_rewrite": percentiles(rewrite),
           "explain_plan_check": percentiles(explain),
           "total_added": percentiles([a + b for a, b in zip(rewrite, explain, strict=True)]),
           "raw_query_run": percentiles(raw), "queries": len(QUERIES)}
    target = settings.home / "bench" / "cypher_scope.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
