"""Operator commands on the real stack: ``substrate ingest`` shows a progress bar (rate, ETA)
on a terminal and nothing else on a pipe; its figures and a GDS job's duration reach the
gateway's /metrics (label ``batch``) through $SUBSTRATE_HOME/metrics."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from neo4j import Driver
from prometheus_client.parser import text_string_to_metric_families

from substrate.settings import PROJECT_ROOT, Settings
from tests.integration.test_jsonl_ingest import chain, write
from tests.support.gateway_client import gateway
from tests.support.graphstate import drop_tenant_graph, new_tenant

pytestmark = pytest.mark.integration


def jsonl(path: Path, n: int) -> Path:
    """``n`` services and ``n - 1`` CALLS edges (2n - 1 lines)."""
    return write(path, chain(n))


@pytest.fixture
def tenant(driver: Driver) -> Iterator[str]:
    name = new_tenant("progress")
    yield name
    drop_tenant_graph(driver, name)


def ingest(stack: Settings, tenant: str, path: Path, stderr: int, *more: Path
           ) -> subprocess.Popen[bytes]:
    env = {**os.environ, **stack.env, "SUBSTRATE_TENANT": tenant, "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "substrate.cli", "ingest", "jsonl", str(path), *map(str, more),
         "--batch-size", "6"], env=env, cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
        stderr=stderr)


def test_ingest_on_a_pipe_prints_only_its_result(stack: Settings, tenant: str,
                                                 tmp_path: Path) -> None:
    proc = ingest(stack, tenant, jsonl(tmp_path / "org.jsonl", 10), subprocess.PIPE)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()
    assert json.loads(out)["batches"] == 4  # 19 lines, 6 records a batch
    assert b"[jsonl]" not in err and b"line/s" not in err


def test_ingest_of_several_files_counts_their_lines_on_one_bar(
        stack: Settings, tenant: str, tmp_path: Path) -> None:
    proc = ingest(stack, tenant, jsonl(tmp_path / "a.jsonl", 10), subprocess.PIPE,
                  jsonl(tmp_path / "b.jsonl", 4))
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()
    result = json.loads(out)
    # a.jsonl: 19 lines, 4 batches; b.jsonl: 7 lines, 2 batches (its records are a.jsonl's
    # first four services again, with their edges under b.jsonl's source: a snapshot each)
    assert result["batches"] == 6 and len(result["snapshots"]) == 6


def test_ingest_on_a_terminal_shows_a_bar_with_rate_and_eta(stack: Settings, tenant: str,
                                                            tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    proc = ingest(stack, tenant, jsonl(tmp_path / "org.jsonl", 10), follower)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        shown += chunk
    proc.wait(timeout=300)
    os.close(leader)
    text = shown.decode(errors="replace")
    assert proc.returncode == 0, text
    assert "ingest org.jsonl" in text and "19/19" in text
    assert re.search(r"line/s|s/line", text), text
    assert re.search(r"<\d\d:\d\d", text), text


def _samples(text: str, family: str, **labels: str) -> list[float]:
    return [s.value for f in text_string_to_metric_families(text) if f.name == family
            for s in f.samples if all(s.labels.get(k) == v for k, v in labels.items())]


def test_batch_figures_reach_the_gateways_metrics(stack: Settings, tenant: str,
                                                  tmp_path: Path) -> None:
    proc = ingest(stack, tenant, jsonl(tmp_path / "org.jsonl", 10), subprocess.PIPE)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()
    job = subprocess.run([sys.executable, "-m", "gds_jobs", "pagerank", "--quiet"],
                         env={**os.environ, **stack.env}, cwd=PROJECT_ROOT,
                         capture_output=True, text=True, timeout=300)
    assert job.returncode == 0, job.stderr
    with gateway(stack) as client:
        text = client.get("/metrics").text
    assert _samples(text, "substrate_ingest_batches", batch="ingest-jsonl", source="jsonl",
                    outcome="snapshot") == [4.0]
    assert _samples(text, "substrate_ingest_elements", batch="ingest-jsonl",
                    kind="nodes_added") == [10.0]
    assert _samples(text, "substrate_gds_job_seconds", batch="gds-pagerank", job="pagerank",
                    status="ok")  # the duration histogram of the run
