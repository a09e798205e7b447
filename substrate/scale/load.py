"""Load a generated organisation through the real write path: one JSONL file per epoch,
the files imported in order by :func:`substrate.connectors.jsonl_ingest.ingest_jsonl_files`
(validation, diff, change log, one snapshot per batch, one NATS event per snapshot), each
with its epoch's date.

Run: ``python -m substrate.scale.load --size S --tenant t-scale-s [--seed 7]``.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from substrate.connectors.jsonl_ingest import BATCH_RECORDS, JsonlFile, ingest_jsonl_files
from substrate.gc_policy import bulk_work
from substrate.graph.writer import GraphWriter
from substrate.scale.generator import Org, generate


@dataclass
class LoadResult:
    edges: int
    nodes: int
    snapshots: int
    seconds: float
    # after each commit: (edges loaded so far, seconds since the start)
    marks: list[tuple[int, float]] = field(default_factory=list)

    @property
    def edges_per_s(self) -> float:
        return self.edges / self.seconds if self.seconds else 0.0


def write_epochs(org: Org, directory: Path) -> list[Path]:
    """``epoch-00.jsonl`` ... in ``directory``; returns the paths in epoch order."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, epoch in enumerate(org.epochs):
        path = directory / f"epoch-{k:02d}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for record in org.records(epoch):
                fh.write(json.dumps(record, separators=(",", ":")) + "\n")
        paths.append(path)
    return paths


def load_org(writer: GraphWriter, org: Org, directory: Path, tenant: str,
             batch_records: int = BATCH_RECORDS) -> LoadResult:
    """Write the epochs' files, then ingest them in order (timed: the ingest only)."""
    paths = write_epochs(org, directory)
    files = [JsonlFile(path, epoch.valid_at)
             for path, epoch in zip(paths, org.epochs, strict=True)]
    times: list[float] = []  # one progress line per commit, in order
    started = time.perf_counter()
    results = ingest_jsonl_files(writer, files, source="scale", tenant=tenant,
                                 batch_size=batch_records, resume=False,
                                 progress=lambda _msg: times.append(time.perf_counter()))
    edges = nodes = snapshots = 0
    marks: list[tuple[int, float]] = []
    for r, t in zip(results, times, strict=True):
        edges += r.counts.get("edges_added", 0)
        nodes += r.counts.get("nodes_added", 0)
        snapshots += r.snapshot_version is not None
        marks.append((edges, t - started))
    return LoadResult(edges, nodes, snapshots, time.perf_counter() - started, marks)


def rate_near(marks: list[tuple[int, float]], at_edges: int, window: int = 3) -> float | None:
    """Edges/s of the ``window`` commits ending at the first mark at or past ``at_edges``."""
    points = [(0, 0.0), *marks]
    for i in range(1, len(points)):
        if points[i][0] >= at_edges:
            j = max(0, i - window)
            edges, seconds = points[i][0] - points[j][0], points[i][1] - points[j][1]
            return edges / seconds if seconds > 0 else None
    return None


def main(argv: list[str] | None = None) -> int:
    from substrate.db import neo4j_driver
    from substrate.settings import Settings

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", default="S", help="S, M, L or a number of edges")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tenant", required=True)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    directory = args.dir or settings.home / "scale" / f"{args.size}-{args.seed}"
    driver = neo4j_driver(settings)
    try:
        with bulk_work():  # the generator too
            result = load_org(GraphWriter(settings, driver), generate(args.size, args.seed),
                              directory, args.tenant)
    finally:
        driver.close()
    print(f"{result.edges:,} edges, {result.nodes:,} nodes, {result.snapshots} snapshots in "
          f"{result.seconds:.1f}s ({result.edges_per_s:,.0f} edges/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
