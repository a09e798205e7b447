"""A small generated organisation loaded through the real write path
(:func:`substrate.scale.load.load_org`, what ``make bench`` does at S / M / L): every epoch's
file in one import, each snapshot dated by its epoch, the graph holding what was generated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from neo4j import Driver

from substrate.graph.writer import GraphWriter
from substrate.scale.generator import generate
from substrate.scale.load import load_org
from substrate.settings import Settings
from tests.support.graphstate import drop_tenant_graph, element_counts, new_tenant

pytestmark = pytest.mark.integration


def test_an_organisation_loads_whole_with_its_epochs_dates(
    stack: Settings, driver: Driver, pg: psycopg.Connection[Any], tmp_path: Path,
) -> None:
    org = generate(1500, seed=5)
    tenant = new_tenant("scaleload")
    try:
        result = load_org(GraphWriter(stack, driver), org, tmp_path, tenant, batch_records=400)
        assert (result.nodes, result.edges) == (len(org.nodes()), len(org.edges()))
        assert element_counts(driver, tenant) == (len(org.nodes()), len(org.edges()))
        assert result.snapshots == len(result.marks)  # every batch changed something
        loaded = [edges for edges, _ in result.marks]
        assert loaded == sorted(loaded) and loaded[-1] == len(org.edges())
        seconds = [t for _, t in result.marks]
        assert seconds == sorted(seconds) and seconds[-1] <= result.seconds
        dates = [r[0] for r in pg.execute(
            "SELECT DISTINCT valid_at FROM snapshots WHERE tenant_id = %s ORDER BY 1",
            (tenant,)).fetchall()]
        assert dates == sorted({e.valid_at for e in org.epochs})
        assert sorted(p.name for p in tmp_path.iterdir()) == [
            f"epoch-{k:02d}.jsonl" for k in range(len(org.epochs))]
    finally:
        drop_tenant_graph(driver, tenant)
