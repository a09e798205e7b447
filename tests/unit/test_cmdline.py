"""Addresses a container's command line names (Sock Shop's load test ``-h edge-router``,
Prometheus's ``-alertmanager.url=``, a Go MySQL DSN flag), with their lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from substrate.connectors.cmdline import arg_addresses, tokens
from substrate.connectors.endpoints import HostRef, hosts_in, mask_passwords
from substrate.connectors.gitrepo import batch_at
from substrate.connectors.yamlnodes import Fact
from substrate.demo.gitwriter import commit_tree, init_repo


@pytest.mark.parametrize(("command", "found"), [
    ("-d 60 -r 200 -c 2 -h edge-router", [("-h", "edge-router")]),
    ("--port 8080 --config /etc/app.yaml -v", []),
    ("-mongo-host=user-db:27017 -database=mongodb", [("-mongo-host", "user-db:27017")]),
    ("locust --host http://front-end.shop.svc.cluster.local",
     [("--host", "http://front-end.shop.svc.cluster.local")]),
    ("zap-baseline.py -t http://app:8080 -c zap.conf", [("-t", "http://app:8080")]),
    ("--db-host mysql", [("--db-host", "mysql")]),
])
def test_addresses_on_a_command_line(command: str, found: list[tuple[str, str]]) -> None:
    said = arg_addresses(tokens(Fact(command, "compose.yml", 7)))
    assert [(flag, f.value) for flag, _, f in said] == found
    assert all(f.line == 7 for _, _, f in said)


def test_a_go_mysql_dsn_names_its_host_and_its_password_is_masked() -> None:
    dsn = "catalogue_user:default_password@tcp(catalogue-db:3306)/socksdb"
    assert hosts_in("DSN", dsn) == [HostRef("catalogue-db")]
    assert hosts_in("DSN", dsn)[0].address == "catalogue_user:***@tcp(catalogue-db:3306)/socksdb"
    assert mask_passwords(f"-DSN={dsn}") == "-DSN=catalogue_user:***@tcp(catalogue-db:3306)/socksdb"


def test_compose_command_and_kubernetes_args_make_edges(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {
        "docker-compose.yml": (
            "services:\n  edge-router:\n    image: acme/edge:1\n  user-sim:\n"
            "    image: acme/load:1\n    command: \"-d 60 -r 200 -h edge-router\"\n"),
        "k8s/catalogue.yaml": (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: catalogue\nspec:\n"
            "  template:\n    spec:\n      containers:\n      - name: catalogue\n"
            "        image: acme/catalogue:1\n        args:\n        - -port=80\n"
            "        - -DSN=u:pw@tcp(catalogue-db:3306)/socksdb\n---\n"
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: catalogue-db\nspec:\n"
            "  template:\n    spec:\n      containers:\n      - name: catalogue-db\n"
            "        image: mysql:8\n"),
    }, "init", "2026-08-03T09:00:00Z")
    edges = {(e.type, e.src, e.dst): e for e in batch_at(repo).edges}
    load = edges[("CALLS", "service:user-sim", "service:edge-router")]
    assert load.props["via"] == "args" and load.props["var"] == "-h"
    assert load.evidence_ref.startswith("docker-compose.yml#L6@")
    db = edges[("DEPENDS_ON", "service:catalogue", "infra:catalogue-db")]
    assert db.props["address"] == "u:***@tcp(catalogue-db:3306)/socksdb"
    assert db.evidence_ref.startswith("k8s/catalogue.yaml#L13@")
