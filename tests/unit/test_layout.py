"""Source folders of services wherever they live, and path-based ownership applied to them."""

from __future__ import annotations

from pathlib import Path

from substrate.connectors.gitrepo import batch_at
from substrate.connectors.layout import is_layout_path, module_name
from substrate.connectors.path_filter import commits_to_parse, is_read, is_relevant
from substrate.demo.gitwriter import commit_tree, init_repo
from substrate.graph.records import GraphBatch

K8S = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  template:
    spec:
      containers:
        - name: {name}
          image: example/{name}:1
"""

CODEOWNERS = """\
# default owners
* @acme/platform @alice

# GitHub: the last matching rule wins
/src/ledger/ @acme/ledger-team
src/ledger/ledger-writer/** @bob
/deploy/ @acme/deployers
"""


def _owners(batch: GraphBatch, kind: str = "OWNS") -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for edge in batch.edges:
        if edge.type == kind:
            out.setdefault(edge.dst, set()).add(edge.src)
    return out


def _repo(tmp_path: Path) -> tuple[Path, str]:
    repo = init_repo(tmp_path / "repo")
    files = {
        ".github/CODEOWNERS": CODEOWNERS,
        "deploy/frontend.yaml": K8S.format(name="frontend"),
        "deploy/ledgerwriter.yaml": K8S.format(name="ledgerwriter"),
        "deploy/balance-reader.yaml": K8S.format(name="balance-reader"),
        "deploy/pay.yaml": K8S.format(name="payments"),
        "deploy/orphan.yaml": K8S.format(name="orphan"),
        "src/frontend/Dockerfile": "FROM python\n",
        "src/frontend/README.md": "# Frontend\n\nServes the web pages.\n",
        "src/ledger/ledger-writer/pom.xml": "<project/>\n",
        "src/ledger/balancereader/build.gradle": "apply plugin: 'java'\n",
        "packages/payments/package.json": '{"name": "@acme/payments"}\n',
        "packages/payments/index.js": "x\n",
        "package.json": '{"name": "root", "workspaces": ["packages/*"]}\n',
        "charts/payments/Chart.yaml": "apiVersion: v2\nname: acme-payments-chart\n",
        "charts/payments/templates/deployment.yaml": K8S.format(name="{{ .Values.name }}"),
        "src/frontend/chart/Chart.yaml": "apiVersion: v2\nname: web-chart\n",
    }
    return repo, commit_tree(repo, files, "init", "2026-08-03T09:00:00Z")[:7]


def test_services_are_linked_to_their_source_folders(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path)
    nodes = {n.ceid: n for n in batch_at(repo).nodes}
    assert nodes["service:frontend"].props["path"] == "src/frontend/"
    assert nodes["service:frontend"].props["description"] == "Serves the web pages."
    assert nodes["service:ledgerwriter"].props["path"] == "src/ledger/ledger-writer/"
    assert nodes["service:balance-reader"].props["path"] == "src/ledger/balancereader/"
    assert nodes["service:payments"].props["path"] == "packages/payments/"  # a workspace member
    assert "path" not in nodes["service:orphan"].props
    assert nodes["service:payments"].props["charts"] == ["charts/payments"]  # charts/<name>
    assert nodes["service:frontend"].props["charts"] == ["src/frontend/chart"]  # <name>/chart
    assert not [n for n in nodes if "values" in n]  # the chart's template is not a manifest


def test_catch_all_and_more_specific_rules_apply_to_services(tmp_path: Path) -> None:
    repo, short = _repo(tmp_path)
    batch = batch_at(repo)
    owns = _owners(batch)
    assert owns["service:frontend"] == {"team:platform", "dev:alice"}  # catch-all
    assert owns["service:balance-reader"] == {"team:ledger-team"}
    assert owns["service:ledgerwriter"] == {"dev:bob"}  # the last matching rule wins
    assert owns["service:orphan"] == {"team:deployers"}  # no folder: its manifest's rule
    assert _owners(batch, "PRIMARY_OWNER")["service:frontend"] == {"team:platform"}
    refs = {e.evidence_ref for e in batch.edges if e.dst == "service:frontend" and e.type == "OWNS"}
    assert refs == {f".github/CODEOWNERS#L2@{short}"}
    part_of = {e.src for e in batch.edges if e.type == "PART_OF"}
    assert {"service:frontend", "service:ledgerwriter", "service:payments"} <= part_of


def test_build_files_count_by_presence_in_history() -> None:
    assert is_layout_path("src/a/Dockerfile.prod") and is_layout_path("x/App.csproj")
    assert not is_layout_path("src/a/main.go")
    assert is_relevant(("A", "src/a/pom.xml")) and is_relevant(("D", "src/a/Dockerfile"))
    # a dependency bump changes no link; what the build states (its clients, its version)
    # counts only where its digest changed (``hits``: none here), and unchecked, it counts
    assert not is_relevant(("M", "src/a/pom.xml"), hits=frozenset())
    assert is_relevant(("M", "src/a/pom.xml"), hits=frozenset({"src/a/pom.xml"}))
    assert is_relevant(("M", "src/a/pom.xml"))
    assert is_relevant(("M", "src/a/README.md")) and is_relevant(("M", "OWNERS"))
    changes: dict[str, tuple[tuple[str, str], ...]] = {
        "c1": (("M", "src/a/package.json"),), "c2": (("A", "src/b/go.mod"),)}
    assert commits_to_parse(["c0", "c1", "c2"], changes, ["c0", "c1", "c2"],
                            hits={"c1": frozenset(), "c2": frozenset()}) == {"c0", "c2"}


def test_history_path_filter_watches_the_new_conventions() -> None:
    read = ["src/ledger/balancereader/pom.xml", "src/frontend/Dockerfile",
            "src/frontend/README.md", "OWNERS", "pkg/api/OWNERS", "OWNERS_ALIASES",
            ".github/owners.yml", "MAINTAINERS.yaml", "catalog-info.yaml",
            "svc/a/catalog-info.yml", "components/x/package.json",
            "README.md"]  # its service table (readme_tables)
    unread = ["docs/owners.txt", "go.work",
              ".github/actions/x/README.md"]  # docs/**/*.md: prose documents (designdocs)
    assert [p for p in read if not is_read(p)] == []
    assert [p for p in unread if is_read(p)] == []
    # source code counts only where its text names a peer (source_calls)
    for path in ("src/frontend/app.py", "src/a/main.go"):
        assert not is_relevant(("M", path), hits=frozenset())
        assert is_relevant(("M", path), hits=frozenset({path}))


def test_a_services_helm_chart_is_cited_where_it_names_itself(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {
        "docker-compose.yml": "services:\n  cart:\n    build: ./src/cart\n",
        "src/cart/Dockerfile": "FROM eclipse-temurin:21\n",
        "src/cart/chart/Chart.yaml": "apiVersion: v2\nname: cart\nversion: 0.1.0\n",
    }, "init", "2026-08-03T09:00:00Z")
    cart = next(n for n in batch_at(repo).nodes if n.ceid == "service:cart")
    assert cart.props["charts"] == ["src/cart/chart"]
    refs = [r for r in cart.props["attribute_refs"] if r.startswith("chart|")]
    assert len(refs) == 1 and refs[0].startswith("chart|src/cart/chart|"
                                                 "src/cart/chart/Chart.yaml#L2@")


def test_a_generic_source_folder_is_named_by_its_parent(tmp_path: Path) -> None:
    """Online Boutique keeps cartservice's project in src/cartservice/src: the service's
    folder is that one, and no module named "src" comes of it; a top-level src/ (manage.get.gov)
    keeps its own name."""
    assert module_name("src/cartservice/src") == "cartservice"
    assert module_name("src") == "src" and module_name("services/api") == "api"
    repo = init_repo(tmp_path / "r")
    commit_tree(repo, {
        "kubernetes-manifests/cartservice.yaml": K8S.format(name="cartservice"),
        "src/cartservice/src/cartservice.csproj": "<Project Sdk=\"Microsoft.NET.Sdk.Web\"/>\n",
        "src/cartservice/tests/cartservice.tests.csproj": "<Project/>\n",
    }, "c", "2024-01-01T00:00:00Z")
    batch = batch_at(repo)
    cart = next(n for n in batch.nodes if n.ceid == "service:cartservice")
    assert cart.props["path"] == "src/cartservice/src/" and cart.props["language"] == "C#"
    modules = {n.props["name"] for n in batch.nodes if n.label == "Module"}
    assert "src" not in modules and "cartservice" not in modules
