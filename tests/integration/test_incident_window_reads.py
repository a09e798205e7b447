"""RSN-UC-06 reads stay bounded on a large organisation and give the answers of the full reads.

A throw-away tenant written through the JSONL write path in two dated snapshots: a chain of
services s0 -> s1 -> s2 -> s3 -> s4 where s1 also calls six leaves (a small hub), an isolated
service, and three incidents (one a week before the other two). Then, in process:

* ``temporal_diff.distances`` told which nodes it is wanted for (the ends of the changes)
  gives them the distances of the full breadth-first search, its last level looking only
  for them (from their side when they are fewer than the nodes it would expand), asks
  nothing when none is wanted, and only the last level when the others were searched before;
* ``find_incident`` reads the incidents of the day a question names (an incident older than
  the newest ``INCIDENT_ROWS`` is still found), the ones the question names by id, and the
  newest otherwise;
* ``incident_diff`` ranks the window's changes by the same distances as the full search;
  when no snapshot falls in the 3 days before an incident (and the question names no span),
  it gives the changes of the 3 days up to the latest snapshot before it, and says so.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

import pytest

from substrate.connectors.jsonl_ingest import ingest_jsonl
from substrate.db import neo4j_driver
from substrate.graph.writer import GraphWriter
from substrate.retrieval import incidents
from substrate.retrieval import temporal_diff as td
from substrate.retrieval.context import SearchContext, SearchOptions
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.linking import link_entities
from substrate.retrieval.router import classify
from substrate.retrieval.scope import ReadScope, resolve_scope
from substrate.services import open_services
from substrate.settings import Settings
from tests.support.graphstate import drop_tenant_graph, new_tenant
from tests.support.recording_reader import Recorder

pytestmark = pytest.mark.integration

T = TypeVar("T")
EPOCHS = (datetime(2026, 1, 5, 9, tzinfo=UTC), datetime(2026, 1, 12, 9, tzinfo=UTC))
LEAVES = [f"l{i}" for i in range(1, 7)]


def service(name: str) -> dict[str, Any]:
    return {"kind": "node", "label": "Service", "ceid": f"service:{name}",
            "props": {"name": name}, "provenance": [f"services/{name}/README.md#L1"]}


def calls(src: str, dst: str, line: int) -> dict[str, Any]:
    return {"kind": "edge", "type": "CALLS", "src": f"service:{src}", "dst": f"service:{dst}",
            "evidence_ref": f"compose.yml#L{line}@abc1234", "confidence": 1.0, "source": "scale"}


def incident(key: str, name: str, date: str, affected: str) -> list[dict[str, Any]]:
    path = f"docs/postmortems/{key}.md"
    return [{"kind": "node", "label": "FailurePattern", "ceid": f"incident:{key}",
             "props": {"name": name, "date": date, "summary": f"{name}."},
             "provenance": [f"{path}#L1"]},
            {"kind": "edge", "type": "AFFECTED", "src": f"incident:{key}",
             "dst": f"service:{affected}", "evidence_ref": f"{path}#L9@abc1234",
             "confidence": 1.0, "source": "scale"}]


def epochs() -> list[list[dict[str, Any]]]:
    first = [service(s) for s in ("s0", "s1", "s2", "s3", "s4", "lonely", *LEAVES)]
    first += [calls(a, b, i) for i, (a, b) in enumerate(
        [("s0", "s1"), ("s1", "s2"), ("s2", "s3"), ("s3", "s4")]
        + [("s1", leaf) for leaf in LEAVES], 1)]
    first += incident("2026-01-06-s0-old", "s0 outage old", "2026-01-06T09:00:00+00:00", "s0")
    second = [service("s5"), calls("s3", "s5", 40), calls("s2", "s4", 41)]
    second += incident("2026-01-13-s0-new", "s0 outage new", "2026-01-13T09:00:00+00:00", "s0")
    second += incident("2026-01-14-lonely", "lonely outage", "2026-01-14T09:00:00+00:00",
                       "lonely")
    second += incident("2026-01-20-s5-late", "s5 outage late", "2026-01-20T09:00:00+00:00",
                       "s5")
    return [first, second]


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    name = new_tenant("incwin")
    directory = tmp_path_factory.mktemp("incwin")
    driver = neo4j_driver(stack)
    try:
        writer = GraphWriter(stack, driver, embedder=None)
        for k, (records, at) in enumerate(zip(epochs(), EPOCHS, strict=True)):
            path = directory / f"epoch-{k}.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in records))
            results = ingest_jsonl(writer, path, source="scale", tenant=name, resume=False,
                                   progress=lambda _m: None, valid_at=at)
            assert all(r.snapshot_version for r in results)
        yield name
    finally:
        drop_tenant_graph(driver, name)
        driver.close()


def run(stack: Settings, tenant: str,
        work: Callable[[Recorder, ReadScope], Awaitable[T]]) -> T:
    async def go() -> T:
        services = open_services(stack, check_templates=False)
        try:
            reader = Recorder(GraphReader(services.async_driver, services.cypher))
            scope = await resolve_scope(stack, tenant)
            return await work(reader, scope)
        finally:
            await services.aclose()
    return asyncio.run(go())


async def _no_embedding(_text: str) -> list[float]:
    raise AssertionError("the incident strategy embeds nothing")


async def context(reader: Recorder, scope: ReadScope, stack: Settings,
                  question: str) -> SearchContext:
    route = classify(question, now=datetime.now(UTC))
    ctx = SearchContext(stack, question, route, scope, reader, _no_embedding, SearchOptions())
    ctx.seeds = await link_entities(reader, scope, list(route.mentions), question)
    return ctx


def test_wanted_distances_are_those_of_the_full_search(stack: Settings, tenant: str) -> None:
    few = {"service:s2", "service:s3", "service:s5", "service:s4", "service:lonely"}
    many = {f"service:{s}" for s in ("s0", "s5", "lonely", *LEAVES)}

    async def work(reader: Recorder, scope: ReadScope) -> list[tuple[Any, ...]]:
        v, out = scope.version, []
        for target, depth, wanted in (("s0", 3, few), ("s2", 2, many), ("s0", 3, set())):
            full = await td.distances(reader, scope, [f"service:{target}"], v, v, depth)
            reader.ran.clear()
            part = await td.distances(reader, scope, [f"service:{target}"], v, v, depth,
                                      wanted)
            out.append((full, part, list(reader.ran)))
        near = await td.distances(reader, scope, ["service:s0"], v, v, 2)
        reader.ran.clear()
        rest = await td.distances(reader, scope, ["service:s0"], v, v, 3, few, near)
        out.append((near, rest, list(reader.ran)))
        return out

    (full, part, ran), (full2, part2, ran2), (_, none, ran3), (_, rest, ran4) = run(
        stack, tenant, work)
    # the first two levels searched beforehand: the last one is left
    assert {w: rest.get(w) for w in few} == {w: full.get(w) for w in few}
    assert ran4 == ["temporal/window_links"]
    assert full["service:s3"] == 3 and full["service:s4"] == 3 and "service:s5" not in full
    assert {w: part.get(w) for w in few} == {w: full.get(w) for w in few}
    # level 3 would expand s2 and six leaves: the four ends still unplaced are asked instead
    assert ran == ["temporal/window_neighbours"] * 2 + ["temporal/window_links"]
    assert full2["service:l1"] == 2 and full2["service:s5"] == 2 and "service:lonely" not in full2
    assert {w: part2.get(w) for w in many} == {w: full2.get(w) for w in many}
    # nine ends against s1, s3, s4: level 2 expands those three, keeping only the ends
    assert ran2 == ["temporal/window_neighbours"] * 2
    assert none == {"service:s0": 0} and ran3 == []


def test_the_incident_of_the_named_day_is_found_beyond_the_newest(
    stack: Settings, tenant: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(incidents, "INCIDENT_ROWS", 1)  # only the newest without a date

    async def work(reader: Recorder, scope: ReadScope) -> list[tuple[str, str]]:
        found = []
        for q in ("What changed before the s0 incident on 2026-01-06?",
                  "What changed before the s0 incident?",
                  "What changed before incident:2026-01-06-s0-old?"):
            got = await incidents.find_incident(await context(reader, scope, stack, q))
            assert got is not None, q
            found.append((got[0]["incident"]["ceid"], got[1]))
        return found

    dated, undated, named = run(stack, tenant, work)
    assert dated == ("incident:2026-01-06-s0-old",
                     "best match of the question's words and entities")
    assert undated[0] == "incident:2026-01-20-s5-late"  # the newest INCIDENT_ROWS only
    assert named == ("incident:2026-01-06-s0-old", "named in the question")


def test_the_window_is_ranked_by_the_full_search_distances(stack: Settings,
                                                           tenant: str) -> None:
    async def work(reader: Recorder, scope: ReadScope) -> tuple[Any, dict[str, int]]:
        ctx = await context(reader, scope, stack,
                            "What changed in the 3 days before the s0 incident on 2026-01-13?")
        found = await incidents.incident_diff(ctx)
        assert found is not None
        full = await td.distances(reader, scope, ["service:s0"], found.window.v_from,
                                  found.window.v_to, incidents.MAX_DISTANCE)
        return found, full

    found, full = run(stack, tenant, work)
    assert found.incident["incident"]["ceid"] == "incident:2026-01-13-s0-new"
    got = {f["change"]["id"]: f["distance"] for f in found.ranked}
    assert got == {f["change"]["id"]: td.distance_of(f["change"], full) for f in found.ranked}
    assert got["service:s3-[CALLS]->service:s5@scale"] == 3
    assert got["service:s2-[CALLS]->service:s4@scale"] == 2
    assert got["service:s5"] is None
    assert [f["distance"] for f in found.ranked] == sorted(
        f["distance"] for f in found.ranked if f["distance"] is not None) + [
        None] * sum(f["distance"] is None for f in found.ranked)


def test_a_quiet_window_gives_the_latest_changes_before_the_incident(
        stack: Settings, tenant: str) -> None:
    """The s5 outage is on 2026-01-20, eight days after the last snapshot (2026-01-12)."""
    async def work(reader: Recorder, scope: ReadScope) -> list[Any]:
        out = []
        for q in ("What changed before the s5 incident on 2026-01-20?",
                  "What changed in the 3 days before the s5 incident on 2026-01-20?"):
            found = await incidents.incident_diff(await context(reader, scope, stack, q))
            assert found is not None and found.incident["incident"]["ceid"] == \
                "incident:2026-01-20-s5-late"
            out.append(found)
        return out

    widened, asked = run(stack, tenant, work)
    assert widened.quiet is not None and widened.quiet.start == datetime(2026, 1, 17, 9,
                                                                         tzinfo=UTC)
    assert widened.window.last_at == EPOCHS[1]
    assert widened.window.start == datetime(2026, 1, 9, 9, tzinfo=UTC)
    assert widened.window.end == datetime(2026, 1, 20, 9, tzinfo=UTC)
    changed = {f["change"]["id"] for f in widened.ranked}
    assert {"service:s5", "service:s3-[CALLS]->service:s5@scale"} <= changed
    assert next(f for f in widened.ranked if f["change"]["id"] == "service:s5")["distance"] == 0
    note = incidents.incident_note(widened)
    assert "nothing: no snapshot of the tenant changed the graph between " \
        "2026-01-17T09:00:00+00:00 and the incident" in note
    assert "The latest change before it was 8 days earlier" in note
    assert "change(s) in 1 snapshot(s)" in note
    # a span the question names is kept, empty or not
    assert asked.quiet is None and asked.ranked == []
    assert asked.window.start == datetime(2026, 1, 17, 9, tzinfo=UTC)


def test_a_level_beyond_the_cap_is_left_out(stack: Settings, tenant: str) -> None:
    """s0's level 2 is s1's neighbours (s2 and six leaves): beyond a cap of 3 it is not
    searched to the end, and the result stops at level 1; the first level is always whole."""
    async def work(reader: Recorder, scope: ReadScope) -> list[dict[str, int]]:
        v = scope.version
        return [await td.distances(reader, scope, ["service:s0"], v, v, 3, cap=cap)
                for cap in (3, 100)] + [
                await td.distances(reader, scope, ["service:s1"], v, v, 3, cap=2)]

    capped, whole, hub = run(stack, tenant, work)
    assert capped == {"service:s0": 0, "service:s1": 1}
    assert whole["service:l1"] == 2 and whole["service:s3"] == 3
    assert len(hub) == 9 and max(hub.values()) == 1  # s1's seven neighbours and s0, whole


def test_a_large_window_reads_only_the_changes_near_the_incident(
        stack: Settings, tenant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``LARGE_WINDOW`` recorded changes, only the changes of nodes within reach of the
    incident's services (``NEAR_CAP``) and of edges with an end among them are read."""
    monkeypatch.setattr(incidents, "LARGE_WINDOW", 1)
    monkeypatch.setattr(incidents, "NEAR_CAP", 2)

    async def work(reader: Recorder, scope: ReadScope) -> incidents.IncidentDiff:
        found = await incidents.incident_diff(await context(
            reader, scope, stack, "What changed in the 3 days before the s0 incident on "
                                  "2026-01-13?"))
        assert found is not None
        return found

    found = run(stack, tenant, work)
    assert found.recorded is not None and found.recorded >= 4 and found.depth == 1
    # s0's only neighbour is s1 (whose level 2 would exceed the cap): the one change of the
    # window with an end at s0 or s1 is the incident's AFFECTED edge (s3 -> s5, s2 -> s4 and
    # the incident nodes themselves are not read)
    ids = {f["change"]["id"] for f in found.ranked}
    assert ids == {"incident:2026-01-13-s0-new-[AFFECTED]->service:s0@scale"}
    assert all(f["distance"] == 0 for f in found.ranked)
    assert f"The window records {found.recorded} changes; only those within 1 hop" in \
        incidents.incident_note(found)
