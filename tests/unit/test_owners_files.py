"""OWNERS files, YAML component → owners maps, GitLab CODEOWNERS sections, Backstage catalogs."""

from __future__ import annotations

from pathlib import Path

from substrate.connectors.gitrepo import batch_at
from substrate.connectors.owners_files import owner_token, parse_owner_map
from substrate.demo.gitwriter import commit_tree, init_repo
from substrate.graph.records import GraphBatch

SERVICE = """\
services:
  {name}:
    build: ../../services-src/{name}
"""
K8S_OWNERS = """\
approvers:
  - alice
  - platform-leads
reviewers:
  - carol
"""
CHROMIUM_OWNERS = """\
# ledger owners
set noparent
dave@example.com
per-file *.md=docs@example.com
file://build/OWNERS_COMMON
"""
OWNER_MAP = """\
components:
  - name: cart
    owners: ["@acme/cart-team", "erin@example.com"]
  - component: search
    team: discovery
checkout: "@frank"
"""
GITLAB = """\
[Backend] @acme/backend
src/
^[Docs][2] @acme/docs
*.md
"""
CATALOG = """\
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: checkout
  description: Takes the money.
spec:
  type: service
  lifecycle: production
  owner: group:default/payments
  system: shop
  dependsOn:
    - resource:default/checkout-db
  consumesApis:
    - api:default/cart-api
---
apiVersion: backstage.io/v1alpha1
kind: Resource
metadata:
  name: checkout-db
spec:
  type: database
  owner: payments
---
apiVersion: backstage.io/v1alpha1
kind: Group
metadata:
  name: payments
spec:
  type: team
  members: [grace]
"""
CART_CATALOG = """\
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: cart
spec:
  type: service
  owner: user:heidi
  providesApis: [cart-api]
"""


def _edges(batch: GraphBatch, kind: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for edge in batch.edges:
        if edge.type == kind:
            out.setdefault(edge.dst, set()).add(edge.src)
    return out


def _repo(tmp_path: Path, files: dict[str, str]) -> tuple[Path, str]:
    repo = init_repo(tmp_path / "repo")
    return repo, commit_tree(repo, files, "init", "2026-08-03T09:00:00Z")[:7]


def _services(*names: str) -> dict[str, str]:
    files = {f"deploy/{n}/compose.yaml": SERVICE.format(name=n) for n in names}
    files.update({f"services-src/{n}/Dockerfile": "FROM scratch\n" for n in names})
    return files


def test_owners_files_inherit_until_noparent(tmp_path: Path) -> None:
    files = _services("cart", "ledger")
    files.update({
        "OWNERS": K8S_OWNERS,
        "OWNERS_ALIASES": "aliases:\n  platform-leads:\n    - ivan\n",
        "services-src/ledger/OWNERS": CHROMIUM_OWNERS,
        "build/OWNERS_COMMON": "judy@example.com\n",
    })
    repo, short = _repo(tmp_path, files)
    batch = batch_at(repo)
    owns = _edges(batch, "OWNS")
    assert owns["service:cart"] == {"dev:alice", "team:platform-leads"}  # root OWNERS
    assert owns["service:ledger"] == {"dev:dave", "dev:judy"}  # noparent; file:// included
    assert _edges(batch, "PRIMARY_OWNER")["service:ledger"] == {"dev:dave"}
    assert ("MEMBER_OF", "dev:ivan", "team:platform-leads") in {
        (e.type, e.src, e.dst) for e in batch.edges}
    alice = next(e for e in batch.edges if e.type == "OWNS" and e.src == "dev:alice")
    assert alice.evidence_ref == f"OWNERS#L2@{short}" and alice.props["via"] == "OWNERS"
    assert "dev:carol" not in {e.src for e in batch.edges}  # reviewers are not owners


def test_owner_map_shapes_and_precedence_over_codeowners(tmp_path: Path) -> None:
    files = _services("cart", "checkout", "search")
    files.update({".github/owners.yml": OWNER_MAP, "CODEOWNERS": "* @acme/everyone\n"})
    repo, short = _repo(tmp_path, files)
    batch = batch_at(repo)
    owns = _edges(batch, "OWNS")
    assert owns["service:cart"] == {"team:cart-team", "dev:erin", "team:everyone"}
    assert owns["service:search"] == {"team:discovery", "team:everyone"}
    assert owns["service:checkout"] == {"dev:frank", "team:everyone"}
    primary = _edges(batch, "PRIMARY_OWNER")
    assert primary["service:cart"] == {"team:cart-team"}  # the map is more specific
    frank = next(e for e in batch.edges if e.type == "OWNS" and e.src == "dev:frank")
    assert frank.evidence_ref == f".github/owners.yml#L6@{short}"


def test_gitlab_sections_own_services(tmp_path: Path) -> None:
    files = {"src/api/Dockerfile": "FROM x\n", "src/api/README.md": "# api\n",
             "compose.yaml": "services:\n  api:\n    build: src/api\n",
             ".gitlab/CODEOWNERS": GITLAB}
    repo, _ = _repo(tmp_path, files)
    batch = batch_at(repo)
    assert _edges(batch, "OWNS")["service:api"] == {"team:backend"}  # section default owners
    (edge,) = [e for e in batch.edges
               if e.type == "PRIMARY_OWNER" and e.dst.startswith("service:")]
    assert edge.props["section"] == "Backend"
    # the path the section's rule names is a Module the section owns too
    assert _edges(batch, "OWNS")["module:src"] == {"team:backend"}


def test_backstage_catalog(tmp_path: Path) -> None:
    files = {"catalog/checkout/catalog-info.yaml": CATALOG,
             "catalog/checkout/src/main.py": "print()\n",
             "cart/catalog-info.yml": CART_CATALOG, "cart/app.js": "x\n",
             "CODEOWNERS": "* @acme/everyone\n"}
    repo, short = _repo(tmp_path, files)
    batch = batch_at(repo)
    nodes = {n.ceid: n for n in batch.nodes}
    checkout = nodes["service:checkout"].props
    assert (checkout["path"], checkout["system"], checkout["description"]) == (
        "catalog/checkout/", "shop", "Takes the money.")
    assert nodes["infra:checkout-db"].props["kind"] == "database"
    primary = _edges(batch, "PRIMARY_OWNER")
    assert primary["service:checkout"] == {"team:payments"}
    assert primary["service:cart"] == {"dev:heidi"}
    assert primary["infra:checkout-db"] == {"team:payments"}
    edges = {(e.type, e.src, e.dst): e for e in batch.edges}
    assert edges[("DEPENDS_ON", "service:checkout", "infra:checkout-db")].evidence_ref == \
        f"catalog/checkout/catalog-info.yaml#L12@{short}"
    assert edges[("CALLS", "service:checkout", "service:cart")].props["api"] == "cart-api"
    assert ("MEMBER_OF", "dev:grace", "team:payments") in edges
    owner = edges[("OWNS", "team:payments", "service:checkout")]
    assert owner.evidence_ref == f"catalog/checkout/catalog-info.yaml#L9@{short}"


def test_owner_tokens_and_bad_maps() -> None:
    assert owner_token("group:default/payments").ceid == "team:payments"  # type: ignore[union-attr]
    assert owner_token("user:heidi").ceid == "dev:heidi"  # type: ignore[union-attr]
    assert owner_token("@org/team").label == "Team"  # type: ignore[union-attr]
    assert owner_token("ops", team=True).label == "Team"  # type: ignore[union-attr]
    assert owner_token("not a name!") is None
    assert parse_owner_map("{broken: [", "owners.yaml") == []
    assert parse_owner_map("cart: []\n", "owners.yaml") == []  # nobody named: no entry
