"""Multi-file Compose projects: include, overlays, .env interpolation, build contexts, profiles."""

from __future__ import annotations

from pathlib import Path

from substrate.connectors.compose import ComposeService, read_compose
from substrate.connectors.gitrepo import batch_at
from substrate.connectors.gitsource import GitSnapshot
from substrate.demo.gitwriter import commit_tree, init_repo

MAIN = """\
include:
  - ../orders/docker-compose.yml
  - path: ../missing/compose.yaml
"""
OVERRIDE = """\
services:
  web:
    build:
      context: ../web
      dockerfile: Dockerfile.dev
    environment:
      - ORDERS_URL=http://orders:${ORDERS_PORT:-8080}
    depends_on:
      orders:
        condition: service_healthy
  orders:
    ports: !override []
"""
TRACING = """\
services:
  debugger:
    image: example/debugger:1
    profiles: [debug]
    environment:
      TARGET_ADDR: web:${WEB_PORT}
"""
ORDERS = """\
services:
  orders:
    build: .
    ports:
      - "8083:8080"
    environment:
      - DB_ENDPOINT=${DB_HOST}:5432
  orders-db:
    image: postgres:16.1
    ports:
      - target: 5432
        published: 5433
"""


def _repo(tmp_path: Path) -> tuple[Path, str]:
    repo = init_repo(tmp_path / "repo")
    files = {
        "deploy/docker-compose.yml": MAIN,
        "deploy/compose.override.yaml": OVERRIDE,
        "deploy/docker-compose.tracing.yml": TRACING,
        "deploy/.env": "WEB_PORT=8000\n",
        "orders/docker-compose.yml": ORDERS,
        "orders/.env": "DB_HOST=orders-db\n",
        "orders/Dockerfile": "FROM scratch\n",
        "web/Dockerfile.dev": "FROM scratch\n",
        "web/app.py": "print()\n",
    }
    return repo, commit_tree(repo, files, "init", "2026-08-03T09:00:00Z")[:7]


def test_include_reads_the_file_relative_to_its_folder(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path)
    by_key: dict[str, ComposeService] = {}
    for svc in read_compose(GitSnapshot(repo)):  # folders in name order: deploy/ first
        by_key.setdefault(svc.key, svc)
    orders = by_key["orders"]
    assert orders.build is not None and orders.build.value == "orders"  # "." of orders/
    assert orders.env["DB_ENDPOINT"].value == "orders-db:5432"  # orders/.env, not deploy/.env
    assert orders.ports == []  # reset by the overlay's !override
    web = by_key["web"]
    assert web.build is not None and (web.build.value, web.dockerfile) == ("web", "Dockerfile.dev")
    assert web.env["ORDERS_URL"].value == "http://orders:8080"
    assert by_key["debugger"].profiles == ["debug"]
    assert by_key["debugger"].env["TARGET_ADDR"].value == "web:8000"
    assert [p.value for p in by_key["orders-db"].ports] == ["5433:5432"]  # long form


def test_project_edges_sources_and_profiles(tmp_path: Path) -> None:
    repo, short = _repo(tmp_path)
    batch = batch_at(repo)
    nodes = {n.ceid: n for n in batch.nodes}
    assert nodes["service:web"].props["path"] == "web/"
    assert nodes["service:orders"].props["path"] == "orders/"
    assert nodes["service:debugger"].props["profiles"] == ["debug"]
    assert nodes["infra:orders-db"].props["kind"] == "database"
    edges = {(e.type, e.src, e.dst): e for e in batch.edges}
    call = edges[("CALLS", "service:web", "service:orders")]
    assert call.props["port"] == 8080
    assert call.evidence_ref == f"deploy/compose.override.yaml#L7@{short}"
    dep = edges[("DEPENDS_ON", "service:orders", "infra:orders-db")]
    assert (dep.props["address"], dep.props["port"]) == ("orders-db:5432", 5432)
    assert dep.evidence_ref == f"orders/docker-compose.yml#L7@{short}"
    assert ("CALLS", "service:debugger", "service:web") in edges
    part_of = {e.src for e in batch.edges if e.type == "PART_OF"}
    assert {"service:web", "service:orders"} <= part_of


FORMAT_1 = """\
app:
  build: .
  links:
    - db
  environment:
    - DATABASE_URL=postgres://app@db/app
db:
  image: postgres:9.4
web:
  image: nginx
  links:
    - app:backend
  ports:
    - "8000:80"
"""


def test_a_compose_file_of_format_1_holds_its_services_at_the_top(tmp_path: Path) -> None:
    """The 2014-2016 format (no ``services:`` key, still in older repositories: 18F/tock)."""
    repo = init_repo(tmp_path / "repo")
    short = commit_tree(repo, {"docker-compose.yml": FORMAT_1, "Dockerfile": "FROM python:3.10\n",
                               "app.py": "print()\n"}, "init", "2016-03-01T09:00:00Z")[:7]
    batch = batch_at(repo)
    nodes = {n.ceid: n for n in batch.nodes}
    assert {"service:app", "infra:db", "service:web"} <= set(nodes)
    assert nodes["infra:db"].props["image"] == "postgres:9.4"
    edges = {(e.type, e.src, e.dst): e for e in batch.edges}
    dep = edges[("DEPENDS_ON", "service:app", "infra:db")]
    assert dep.evidence_ref == f"docker-compose.yml#L6@{short}"
    link = edges[("DEPENDS_ON", "service:web", "service:app")]  # a link, as depends_on
    assert link.evidence_ref == f"docker-compose.yml#L12@{short}"
