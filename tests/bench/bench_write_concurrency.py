"""Does a snapshot's write get faster when it is split over concurrent Neo4j transactions?

The write path commits a snapshot as one Neo4j transaction, and a transaction runs on one
core. This benchmark measures what the obvious way out would give on this machine: the same
relationships created by write transactions one after another, and with each transaction's
rows split over ``SPLIT`` transactions running at once (one thread and session each).

Into a throwaway tenant: ``NODES`` Service nodes (``graph/create_nodes``, the writer's
properties), then ``ROUNDS`` rounds of ``BATCHES`` batches of ``BATCH_EDGES`` CALLS
relationships (``graph/create_edges``, the writer's fixed properties and an
``evidence_ref``; starts uniform, ends Pareto-skewed as in the scale generator's fan-in),
each round once sequentially and once split. Relationships per second for each; the
tenant is deleted afterwards.

Run: ``.substrate/venv/bin/python -m tests.bench.bench_write_concurrency``; needs
``substrate up``. Writes ``$SUBSTRATE_HOME/bench/write_concurrency.json`` and prints the
figures.
"""

from __future__ import annotations

import json
import random
import secrets
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from neo4j import Driver, ManagedTransaction

from substrate.cypher import CypherLibrary
from substrate.db import neo4j_driver
from substrate.graph.neo4j_write import ROWS, edge_row, new_node_props
from substrate.graph.records import EdgeRecord, NodeRecord
from substrate.graph.writer import MAXV
from substrate.settings import Settings
from tests.bench.bench_ingest import delete_tenant

NODES = 20_000
BATCH_EDGES = 20_000  # one snapshot's worth
BATCHES = 4
ROUNDS = 3
SPLIT = 2  # concurrent transactions per batch (the machine's cores)
SOURCE = "bench-write-concurrency"
VERSION = 2


class Load:
    def __init__(self, settings: Settings, driver: Driver, tenant: str, seed: int = 7) -> None:
        self.driver, self.tenant = driver, tenant
        self.cypher = CypherLibrary.load()
        self.ts = datetime.now(UTC).isoformat()
        self.random = random.Random(seed)
        self.ids: dict[str, str] = {}
        self.count = 0

    def create_nodes(self) -> None:
        query = self.cypher.text("graph/create_nodes", label="Service", entity=True)
        rows = [{"props": new_node_props(NodeRecord(f"service:n{i}", "Service",
                                                    {"name": f"n{i}"}),
                                         None, self.tenant, 1, MAXV, SOURCE)}
                for i in range(NODES)]
        for i in range(0, len(rows), ROWS):
            records, _, _ = self.driver.execute_query(
                query, {"rows": rows[i : i + ROWS], "ts": self.ts})
            self.ids.update(dict(records[0]["created"]))

    def edge_rows(self, n: int) -> list[dict[str, Any]]:
        rows = []
        for _ in range(n):
            a = self.random.randrange(NODES)
            b = min(int(self.random.paretovariate(1.2)) - 1, NODES - 1)
            self.count += 1
            edge = EdgeRecord("CALLS", f"service:n{a}", f"service:n{b}",
                              f"services/n{a}/deploy.yaml#L{self.count % 400 + 1}@"
                              f"{self.count:040x}", source=SOURCE)
            rows.append(edge_row(f"{edge.src}-[CALLS]->{edge.dst}#{self.count}", edge,
                                 self.ids))
        return rows

    def write(self, rows: list[dict[str, Any]]) -> None:
        """One write transaction creating ``rows``."""
        query = self.cypher.text("graph/create_edges", rel_type="CALLS", user_props=False)

        def work(tx: ManagedTransaction) -> None:
            for i in range(0, len(rows), ROWS):
                tx.run(query, {"tenant": self.tenant, "rows": rows[i : i + ROWS],
                               "version": VERSION, "ts": self.ts}).consume()

        with self.driver.session() as session:
            session.execute_write(work)


def timed_round(load: Load, pool: ThreadPoolExecutor) -> dict[str, float]:
    """One round: ``BATCHES`` batches sequentially, then as many split ``SPLIT`` ways."""
    batches = [load.edge_rows(BATCH_EDGES) for _ in range(BATCHES)]
    started = time.perf_counter()
    for rows in batches:
        load.write(rows)
    sequential = time.perf_counter() - started
    batches = [load.edge_rows(BATCH_EDGES) for _ in range(BATCHES)]
    started = time.perf_counter()
    for rows in batches:
        parts = [rows[k::SPLIT] for k in range(SPLIT)]
        for future in [pool.submit(load.write, part) for part in parts]:
            future.result()
    split = time.perf_counter() - started
    edges = BATCHES * BATCH_EDGES
    return {"sequential_s": round(sequential, 3), "split_s": round(split, 3),
            "sequential_edges_per_s": round(edges / sequential),
            "split_edges_per_s": round(edges / split)}


def run() -> dict[str, Any]:
    settings = Settings.from_env()
    driver = neo4j_driver(settings)
    tenant = f"t-bench-conc-{secrets.token_hex(4)}"
    try:
        load = Load(settings, driver, tenant)
        load.create_nodes()
        with ThreadPoolExecutor(max_workers=SPLIT, thread_name_prefix="split") as pool:
            rounds = [timed_round(load, pool) for _ in range(ROUNDS)]
    finally:
        cleanup = delete_tenant(settings, driver, tenant)
        driver.close()
    return {
        "benchmark": "write_concurrency", "nodes": NODES, "batch_edges": BATCH_EDGES,
        "batches_per_round": BATCHES, "split": SPLIT, "rounds": rounds,
        "median_sequential_edges_per_s": statistics.median(
            r["sequential_edges_per_s"] for r in rounds),
        "median_split_edges_per_s": statistics.median(r["split_edges_per_s"] for r in rounds),
        "cleanup": cleanup, "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def main() -> None:
    result = run()
    out = Settings.from_env().home / "bench" / "write_concurrency.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    for k, r in enumerate(result["rounds"], start=1):
        print(f"round {k}: {BATCHES} x {BATCH_EDGES:,} relationships one transaction after "
              f"another {r['sequential_s']:.2f} s ({r['sequential_edges_per_s']:,}/s); each "
              f"split over {SPLIT} concurrent transactions {r['split_s']:.2f} s "
              f"({r['split_edges_per_s']:,}/s)")
    print(f"median: sequential {result['median_sequential_edges_per_s']:,} relationships/s, "
          f"split {result['median_split_edges_per_s']:,}/s  -> {out}")


if __name__ == "__main__":
    main()
