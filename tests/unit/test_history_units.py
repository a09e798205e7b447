"""Issue 9 building blocks: blame origins with file names, audit tokens, rename detection,
ADR citation patterns, the point-in-time fold."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from substrate.connectors import blame
from substrate.connectors.evidence_audit import (
    CHUNK_REF,
    REF,
    key_tokens,
    squash,
    stated_by_location,
)
from substrate.connectors.gitcmd import tree_blobs
from substrate.connectors.renames import detect, redeclared
from substrate.graph.records import GraphBatch, NodeRecord
from substrate.retrieval.memory_any import citation_pattern, is_other_entity
from substrate.retrieval.temporal_props import changed_values, fold


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def test_blame_names_the_file_as_it_was_in_the_origin_commit(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "docker-compose.yml").write_text("services:\n  web:\n    image: web:1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "one")
    first = git(repo, "rev-parse", "HEAD")
    git(repo, "mv", "docker-compose.yml", "compose.yaml")
    (repo / "compose.yaml").write_text("services:\n  web:\n    image: web:2\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "two")
    second = git(repo, "rev-parse", "HEAD")
    origins = blame.blame(repo, second, tree_blobs(repo, second)["compose.yaml"],
                          "compose.yaml")
    assert origins == ((first, 1, "docker-compose.yml"), (first, 2, "docker-compose.yml"),
                       (second, 3, "compose.yaml"))
    # git show <commit>:<path> exists for each origin
    for commit, line, path in origins:
        text = git(repo, "show", f"{commit}:{path}").splitlines()
        assert 1 <= line <= len(text)


def test_parse_porcelain_groups_without_a_filename_reuse_their_commits() -> None:
    a, b = "a" * 40, "b" * 40
    text = "\n".join([
        f"{a} 1 1 1", "author x", "filename old.yml", "\tl1",
        f"{b} 2 2 2", "author y", "filename new.yml", "\tl2", f"{b} 3 3", "\tl3",
        f"{a} 4 4 1", "\tl4",  # a was already described: no filename line
    ])
    assert blame.parse_porcelain(text, "new.yml") == (
        (a, 1, "old.yml"), (b, 2, "new.yml"), (b, 3, "new.yml"), (a, 4, "old.yml"))


def test_audit_tokens_and_refs() -> None:
    edge = {"src": "service:frontend", "dst": "service:balancereader", "src_name": "frontend",
            "dst_name": "balancereader", "props": {"configmap": "service-api-config",
                                                   "port": 8080}}
    tokens = key_tokens(edge)
    assert {"balancereader", "frontend", "serviceapiconfig", "8080"} <= tokens
    assert any(t in squash('BALANCES_API_ADDR: "balancereader:8080"') for t in tokens)
    assert not any(t in squash("replicas: 1") for t in tokens)
    m = REF.match("kubernetes-manifests/a b.yaml#L12@abc1234")
    assert m is not None and (m["path"], m["line"], m["commit"]) == (
        "kubernetes-manifests/a b.yaml", "12", "abc1234")
    assert REF.match("no ref") is None
    assert CHUNK_REF.match("docs/adr/0002-x.md#chunk3") and CHUNK_REF.match("d.md#chunk0-chunk1")
    assert not CHUNK_REF.match("docs/adr/0002-x.md#L3@abc1234")


def node(ceid: str, ref: str, label: str = "Infrastructure") -> NodeRecord:
    return NodeRecord(ceid, label, {"name": ceid.split(":")[1]}, (ref,))


def test_detect_renames_only_unambiguous_pairs() -> None:
    old = node("infra:mongodb-users", "k/mongodb-users.yaml#L18@3e6b180")
    keep = node("infra:web", "k/web.yaml#L4@1111111")
    new = node("infra:accounts-db", "k/accounts-db.yaml#L18@e71bbf7")
    moved = {"k/mongodb-users.yaml": "k/accounts-db.yaml"}
    (found,) = detect(GraphBatch([old, keep]), GraphBatch([keep, new]), moved)
    assert (found.old.ceid, found.new.ceid, found.evidence_ref) == (
        "infra:mongodb-users", "infra:accounts-db", "k/accounts-db.yaml#L18@e71bbf7")
    assert detect(GraphBatch([old, keep]), GraphBatch([keep, new]), {}) == []
    other = node("service:accounts-db", "k/accounts-db.yaml#L3@e71bbf7", "Service")
    assert detect(GraphBatch([old]), GraphBatch([other]), moved) == []  # labels differ
    twin = node("infra:accounts-db-2", "k/accounts-db.yaml#L40@e71bbf7")
    assert detect(GraphBatch([old]), GraphBatch([new, twin]), moved) == []  # ambiguous


def imaged(ceid: str, image: str, *refs: str) -> NodeRecord:
    return NodeRecord(ceid, "Infrastructure", {"name": ceid.split(":")[1], "image": image},
                      tuple(refs))


def test_a_declaration_renamed_in_place_with_the_same_image() -> None:
    deploy, compose = "dist/deploy.yaml#L970@433da61", "compose.yml#L144@433da61"
    old = imaged("infra:rabbitmq", "rabbitmq:3-management", compose, deploy)
    new = imaged("infra:orders-rabbitmq", "rabbitmq:3-management", "dist/deploy.yaml#L1127@9034df1")
    still = imaged("infra:rabbitmq", "rabbitmq:3-management", compose)  # compose keeps it
    (link,) = redeclared(GraphBatch([old]), GraphBatch([still, new]), set())
    assert (link.old.ceid, link.new.ceid, link.kind, link.link_only) == (
        "infra:rabbitmq", "infra:orders-rabbitmq", "same image", True)
    assert link.evidence_ref == "dist/deploy.yaml#L1127@9034df1"
    (merge,) = redeclared(GraphBatch([old]), GraphBatch([new]), set())
    assert not merge.link_only  # gone everywhere: one identity (ALIAS_OF)
    other = imaged("infra:orders-mq", "rabbitmq:3.12", "dist/deploy.yaml#L1127@9034df1")
    assert redeclared(GraphBatch([old]), GraphBatch([still, other]), set()) == []  # image
    assert redeclared(GraphBatch([old]), GraphBatch([old, new]), set()) == []  # still there
    twin = imaged("infra:carts-rabbitmq", "rabbitmq:3-management", "dist/deploy.yaml#L9@9034df1")
    assert redeclared(GraphBatch([old]), GraphBatch([still, new, twin]), set()) == []
    assert redeclared(GraphBatch([old]), GraphBatch([new]), {new.ceid}) == []  # taken
    # the new name declared before by another file (a chart): a link, never a merge
    chart = "deploy/charts/orders/templates/rabbitmq.yaml#L5@1111111"
    known = imaged("infra:orders-rabbitmq", "rabbitmq:3-management", chart)
    moved = imaged("infra:orders-rabbitmq", "rabbitmq:3-management", chart,
                   "dist/deploy.yaml#L1127@9034df1")
    (link,) = redeclared(GraphBatch([old, known]), GraphBatch([still, moved]), set())
    assert (link.old.ceid, link.new.ceid, link.link_only) == (
        "infra:rabbitmq", "infra:orders-rabbitmq", True)
    assert link.evidence_ref == "dist/deploy.yaml#L1127@9034df1"
    (link,) = redeclared(GraphBatch([old, known]), GraphBatch([moved]), set())
    assert link.link_only  # both existed before: no merge of two identities
    assert redeclared(GraphBatch([old, moved]), GraphBatch([still, moved]), set()) == []


def test_membership_is_stated_by_the_cited_files_folder() -> None:
    edge = {"type": "PART_OF", "src": "module:src-e2e", "dst": "repo:shop"}
    assert stated_by_location(edge, "src/e2e/README.md")
    assert stated_by_location(edge, "src/e2e/tests/run.py")
    assert not stated_by_location(edge, "src/README.md")
    assert not stated_by_location(edge, "src/e2e-other/README.md")
    assert not stated_by_location({**edge, "type": "DEPENDS_ON"}, "src/e2e/README.md")


def test_changed_values_are_those_that_differ_from_today() -> None:
    log: list[tuple[int, dict[str, Any]]] = [
        (1, {"props": {"env": ["A=1"], "name": "web"}}),
        (5, {"props": {"env": ["A=2"], "port": 80}})]
    assert changed_values(log, 2, None) == {"env": ["A=1"], "port": None}
    assert changed_values(log, 2, frozenset({"env"})) == {"env": ["A=1"]}
    assert changed_values(log, 5, None) == {}
    assert changed_values(log, 0, None) == {}  # not known then


def test_citation_pattern_and_entity_ids() -> None:
    pattern = re.compile(citation_pattern(12))
    assert pattern.match("* Decide on async payments (done: ADR-0012).")
    assert pattern.match("see adr 12\nand more")
    assert not pattern.match("see ADR-0120") and not pattern.match("ADR-0002")
    assert is_other_entity("adr:0012") and is_other_entity("incident:x")
    assert not is_other_entity("service:checkout") and not is_other_entity("checkout")


def test_fold_is_the_change_log_up_to_a_version() -> None:
    history = [(1, {"props": {"name": "a", "env": ["X=1"]}, "provenance": ["f#L1@a"]}),
               (5, {"props": {"env": ["X=1", "Y=2"], "port": 80}, "provenance": ["f#L2@b"]})]
    assert fold(history, 3) == ({"name": "a", "env": ["X=1"]}, {"name", "env", "port"},
                                ["f#L1@a"])
    assert fold(history, 5)[0] == {"name": "a", "env": ["X=1", "Y=2"], "port": 80}
