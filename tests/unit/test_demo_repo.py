"""The demo organisation: a deterministic repository, loaded through the real connectors."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from substrate.connectors.gitcmd import run_git
from substrate.connectors.history import CommitInfo, batch_at, list_commits
from substrate.connectors.jsonl_format import read_jsonl
from substrate.demo.build_repo import build_demo_repo
from substrate.demo.gitwriter import CommitSpec, commit_tree, fast_import, init_repo
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord

ORG = Path(__file__).resolve().parents[2] / "substrate" / "demo" / "org.jsonl"
OWNERSHIP_CHANGE = "2026-09-08T09:00:00Z"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo_repo(tmp_path_factory.mktemp("demo") / "shop")


@pytest.fixture(scope="module")
def commits(demo: Path) -> list[CommitInfo]:
    return list_commits(demo)


@pytest.fixture(scope="module")
def head(demo: Path) -> GraphBatch:
    return batch_at(demo)


def _at(demo: Path, commits: list[CommitInfo], before: str) -> GraphBatch:
    """The batch of the last commit strictly before ``before``."""
    return batch_at(demo, [c for c in commits if c.timestamp < before][-1].sha)


def _targets(batch: GraphBatch, src: str, types: tuple[str, ...]) -> set[str]:
    return {e.dst for e in batch.edges if e.src == src and e.type in types}


def _sources(batch: GraphBatch, dst: str, types: tuple[str, ...]) -> set[str]:
    return {e.src for e in batch.edges if e.dst == dst and e.type in types}


def test_build_is_deterministic(commits: list[CommitInfo], tmp_path: Path) -> None:
    again = list_commits(build_demo_repo(tmp_path / "again"))
    assert [c.sha for c in again] == [c.sha for c in commits]
    with pytest.raises(FileExistsError):
        build_demo_repo(tmp_path / "again")


def test_history_spans_eight_weeks(commits: list[CommitInfo]) -> None:
    assert commits[0].timestamp == "2026-08-03T09:00:00Z"
    assert commits[-1].timestamp == "2026-10-30T16:00:00Z"
    assert commits[-1].when - commits[0].when >= timedelta(weeks=8)
    assert len(commits) >= 30


def test_head_counts(head: GraphBatch) -> None:
    labels = [n.label for n in head.nodes]
    assert labels.count("Service") >= 30
    assert labels.count("Team") >= 6
    assert labels.count("DecisionNode") >= 10
    assert labels.count("FailurePattern") >= 5
    assert labels.count("Document") >= 3
    assert all(e.evidence_ref for e in head.edges + head.pending if isinstance(e, EdgeRecord))


def test_every_evidence_ref_points_at_a_real_line(demo: Path, head: GraphBatch) -> None:
    refs = {e.evidence_ref for e in head.edges}
    refs |= {r for e in head.edges for r in e.props.get("evidence_refs", [])}
    texts: dict[tuple[str, str], list[str]] = {}
    for ref in sorted(refs):
        path, _, rest = ref.partition("#L")
        line, _, sha = rest.partition("@")
        if (sha, path) not in texts:
            texts[(sha, path)] = run_git(demo, "show", f"{sha}:{path}").decode().splitlines()
        assert 1 <= int(line) <= len(texts[(sha, path)]), ref


def test_services_come_and_go(demo: Path, commits: list[CommitInfo]) -> None:
    def services(batch: GraphBatch) -> set[str]:
        return {n.ceid for n in batch.nodes if n.label == "Service"}

    first, last = services(batch_at(demo, commits[0].sha)), services(batch_at(demo))
    assert last - first == {
        "service:recommendation", "service:promotions", "service:tax", "service:wishlist",
    }  # fmt: skip
    assert first - last == {"service:legacy-coupons"}


def test_checkout_ownership_changes(
    demo: Path, commits: list[CommitInfo], head: GraphBatch
) -> None:
    before = _at(demo, commits, OWNERSHIP_CHANGE)
    kinds = ("PRIMARY_OWNER",)
    assert _sources(before, "service:checkout", kinds) == {"team:commerce"}
    assert _sources(head, "service:checkout", kinds) == {"team:payments"}
    assert _sources(head, "service:checkout", ("OWNS",)) == {"team:payments", "dev:lgarcia"}


def test_adr_0003_superseded_mid_history(demo: Path, commits: list[CommitInfo]) -> None:
    def status(batch: GraphBatch) -> str:
        return str(next(n.props["status"] for n in batch.nodes if n.ceid == "adr:0003"))

    assert status(_at(demo, commits, "2026-09-28T16:00:00Z")) == "accepted"
    assert status(batch_at(demo)) == "superseded"


def test_expected_structural_answers(head: GraphBatch) -> None:
    deps = ("CALLS", "DEPENDS_ON")
    assert _targets(head, "service:checkout", deps) == {
        "service:cart", "service:payment", "service:orders", "service:shipping",
        "service:pricing", "service:fraud", "infra:kafka", "infra:redis",
    }  # fmt: skip
    assert _targets(head, "service:payment", deps) == {
        "service:fraud", "service:ledger", "service:currency", "infra:payments-db", "infra:kafka",
    }  # fmt: skip
    assert _sources(head, "service:payment", deps) == {"service:checkout", "service:returns"}
    assert _sources(head, "service:auth", ("CALLS",)) == {
        "service:api-gateway",
        "service:mobile-bff",
    }
    why = _sources(head, "service:payment", ("WHY",))
    assert why == {"adr:0003", "adr:0008", "adr:0012"}
    assert _sources(head, "adr:0003", ("SUPERSEDES",)) == {"adr:0012"}


def test_incident_after_risky_change(
    demo: Path, commits: list[CommitInfo], head: GraphBatch
) -> None:
    incident = next(n for n in head.nodes if n.ceid.endswith("checkout-payment-timeouts"))
    start = datetime.fromisoformat(str(incident.props["date"]))
    window = [c for c in commits if start - timedelta(days=3) <= c.when < start]
    assert [c.subject.rsplit("(", 1)[-1] for c in window] == ["#431)", "#433)"]
    assert _targets(head, incident.ceid, ("CAUSED_BY",)) == {"pr:431", "service:checkout"}
    before, after = batch_at(demo, window[0].sha + "~1"), batch_at(demo, window[0].sha)
    assert "service:fraud" in _targets(after, "service:checkout", ("CALLS",))
    assert "service:fraud" not in _targets(before, "service:checkout", ("CALLS",))


def test_pending_holds_the_fuzzy_mention(head: GraphBatch) -> None:
    assert [(p.type, p.dst, p.confidence) for p in head.pending if isinstance(p, EdgeRecord)] == [
        ("MENTIONS", "service:recommendation", 0.8)
    ]


def test_org_jsonl_matches_the_repository(head: GraphBatch) -> None:
    records = read_jsonl(ORG)
    org_nodes = {r.ceid: r for r in records if isinstance(r, NodeRecord)}
    git_nodes = {n.ceid: n for n in head.nodes}
    known = set(org_nodes) | set(git_nodes)
    edges = [r for r in records if isinstance(r, EdgeRecord)]
    assert all(e.src in known and e.dst in known for e in edges)
    for cid in set(org_nodes) & set(git_nodes):  # shared nodes agree on shared properties
        shared = set(org_nodes[cid].props) & set(git_nodes[cid].props)
        assert {k: org_nodes[cid].props[k] for k in shared} == {
            k: git_nodes[cid].props[k] for k in shared
        }, cid
    labels = [n.label for n in org_nodes.values()]
    assert labels.count("PullRequest") >= 8
    assert {"ProjectItem", "IntentAssertion", "Policy", "ExceptionNode", "MemoryNode"} <= set(
        labels
    )
    links = {(e.src, e.dst) for e in edges if e.type == "LINKS_TO"}
    assert ("pr:447", "item:shop-22") in links  # the intent-mismatched PR
    epic = {e.dst for e in edges if e.type == "LINKS_TO" and e.src == "item:shop-10"}
    asserts = {e.dst for e in edges if e.type == "ASSERTS" and e.src in epic}
    assert asserts == {"service:checkout", "service:payment", "service:cart", "service:pricing"}


def test_fast_import_writes_the_same_commits_as_commit_tree(tmp_path: Path) -> None:
    specs = [
        CommitSpec({"a.txt": "é\n", "d/b.txt": "b\n"}, "one", "2026-08-03T09:00:00Z", "A", "a@x"),
        CommitSpec({"a.txt": "é2\n"}, "two: ✅", "2026-08-04T09:00:00+00:00", "B", "b@x"),
    ]
    fast = init_repo(tmp_path / "fast")
    fast_import(fast, specs)
    slow = init_repo(tmp_path / "slow")
    shas = [commit_tree(slow, s.files, s.message, s.when, s.name, s.email) for s in specs]
    assert [c.sha for c in list_commits(fast)] == shas
    assert (fast / "a.txt").read_text() == "é2\n" and not (fast / "d").exists()
