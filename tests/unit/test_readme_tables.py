"""What a README says each service is: the service table of the top-level README (Bank of
Anthos and Online Boutique write one: "| Service | Language | Description |") and the
``Language:`` line of a service's own README; each stated with its line."""

from __future__ import annotations

from pathlib import Path

from substrate.connectors.gitrepo import batch_at
from substrate.connectors.path_filter import is_read
from substrate.connectors.readme_tables import is_table_path, service_rows
from substrate.demo.gitwriter import commit_tree, init_repo
from tests.unit.test_layout import K8S

README = """\
# Shop

| Screenshot | Home |
| --- | --- |
| ![a](a.png) | ![b](b.png) |

## Services

| Service | Language | Description |
| --- | --- | --- |
| [frontend](/src/frontend) | Go | Serves the website. |
| [ledger-writer](/src/ledger/ledgerwriter) | Java | Accepts and validates transactions. |
| [cart](./src/cart/) | C# | Stores the items in the `cart`. |
| `ledger-db` | PostgreSQL | Ledger of all transactions. |
| [unknown](/src/unknown) | Rust | Not deployed anywhere. |

```
| Service | Description |
| --- | --- |
| frontend | inside a code fence: not a table |
```
"""

def test_service_rows_of_a_readme() -> None:
    rows = service_rows(README)
    assert [(r.line, r.name, r.href, r.language) for r in rows] == [
        (11, "frontend", "/src/frontend", "Go"),
        (12, "ledger-writer", "/src/ledger/ledgerwriter", "Java"),
        (13, "cart", "./src/cart/", "C#"),
        (14, "ledger-db", "", "PostgreSQL"),
        (15, "unknown", "/src/unknown", "Rust"),
    ]  # the screenshot table has no service column; the fenced one is code
    assert rows[2].description == "Stores the items in the cart."  # as it reads


def test_a_table_needs_a_name_column_and_a_description_or_language() -> None:
    assert service_rows("| Service | Port |\n| --- | --- |\n| cart | 80 |\n") == []
    assert service_rows("| Port | Description |\n| --- | --- |\n| 80 | web |\n") == []
    rows = service_rows("| Component | Purpose |\n|---|---|\n| cart | Carts. |\n")
    assert [(r.name, r.description, r.language) for r in rows] == [("cart", "Carts.", "")]


def test_the_readme_table_describes_services_with_its_lines(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    files = {
        "README.md": README,
        "k8s/frontend.yaml": K8S.format(name="frontend"),
        "k8s/ledgerwriter.yaml": K8S.format(name="ledgerwriter"),
        "k8s/cart.yaml": K8S.format(name="cart"),
        "k8s/ledger-db.yaml": K8S.format(name="ledger-db"),
        "src/frontend/Dockerfile": "FROM golang\n",
        "src/frontend/README.md": "# frontend\n\nThe storefront.\n\n- Language: Go 1.22\n",
        "src/ledger/ledgerwriter/pom.xml": "<project/>\n",
        "src/cart/cart.csproj": "<Project/>\n",
    }
    sha = commit_tree(repo, files, "init", "2026-08-03T09:00:00Z")[:7]
    nodes = {n.ceid: n.props for n in batch_at(repo).nodes}
    # the folder's own README first: its description and its Language line
    assert nodes["service:frontend"]["description"] == "The storefront."
    assert nodes["service:frontend"]["language"] == "Go 1.22"
    assert {"description|The storefront.|src/frontend/README.md#L3@" + sha,
            "language|Go 1.22|src/frontend/README.md#L5@" + sha} \
        <= set(nodes["service:frontend"]["attribute_refs"])
    # the table: by the folder its link names, or by its name
    writer = nodes["service:ledgerwriter"]
    assert (writer["description"], writer["language"]) == (
        "Accepts and validates transactions.", "Java")
    assert f"description|Accepts and validates transactions.|README.md#L12@{sha}" \
        in writer["attribute_refs"]
    assert nodes["service:cart"]["language"] == "C#"
    db = next(p for c, p in nodes.items() if c.endswith(":ledger-db"))
    assert db["description"] == "Ledger of all transactions."
    assert f"language|PostgreSQL|README.md#L14@{sha}" in db["attribute_refs"]
    assert not any(c.endswith(":unknown") for c in nodes)  # a row creates no service


def test_history_replay_reads_the_readme() -> None:
    assert is_read("README.md") and is_read("docs/README.md")


SERVICE_PAGE = """\
# Service Roles

| Service | Language | Description |
| --- | --- | --- |
| [checkout](../src/checkout/README.md) | Go | Prepares the order. |
| [email](../src/email/README.md) | Ruby | Sends the confirmation. |
| [payment](../src/payment/README.md) | JavaScript | Charges the card. |
"""


def test_a_docs_service_page_and_readmes_that_do_not_describe(tmp_path: Path) -> None:
    """opentelemetry-demo's shape: the table is ``docs/service_table.md``, its links relative
    to ``docs/`` and to each folder's README; a folder README opening on build instructions,
    a list, or a sentence introducing a payload describes nothing of its own (or less)."""
    repo = init_repo(tmp_path / "repo")
    files = {
        "docs/service_table.md": SERVICE_PAGE,
        **{f"k8s/{n}.yaml": K8S.format(name=n) for n in ("checkout", "email", "payment")},
        **{f"src/{n}/Dockerfile": "FROM scratch\n" for n in ("checkout", "email", "payment")},
        "src/checkout/README.md": "# checkout\n\nRun the following command to restore "
                                  "dependencies:\n\n```sh\ndep ensure\n```\n",
        "src/email/README.md": "# Email\n\nThe Email service renders a log message. It "
                               "expects a JSON payload like:\n\n```json\n{}\n```\n",
        "src/payment/README.md": "# Payment\n\n- Completed: :100:\n- Not yet: :construction:\n",
    }
    sha = commit_tree(repo, files, "init", "2026-08-03T09:00:00Z")[:7]
    nodes = {n.ceid: n.props for n in batch_at(repo).nodes}
    assert nodes["service:checkout"]["description"] == "Prepares the order."
    assert f"language|Go|docs/service_table.md#L5@{sha}" in \
        nodes["service:checkout"]["attribute_refs"]
    assert nodes["service:email"]["description"] == "The Email service renders a log message."
    assert nodes["service:email"]["language"] == "Ruby"
    assert nodes["service:payment"]["description"] == "Charges the card."
    assert is_read("docs/service_table.md") and is_read("SERVICES.md")
    assert not is_table_path("docs/setup.md")  # read, as a prose document (designdocs)


BULLETS = """\
# Spring Petclinic Microservices

The application is split into several services:

* **Customers Service**: Manages customer and pet data.
* **Visits Service** - Manages pet visit records.
* `vets-service`: Provides veterinarian information.
* **Step 1**: run docker compose up before anything else
"""


def test_a_readme_list_of_services_describes_them(tmp_path: Path) -> None:
    """spring-petclinic-microservices lists its services as bold names in a bullet list: each
    item naming a service says what it is, cited at its line; an item naming none is no
    service."""
    rows = [(r.line, r.name, r.description) for r in service_rows(BULLETS)]
    assert rows[:3] == [(5, "Customers Service", "Manages customer and pet data."),
                        (6, "Visits Service", "Manages pet visit records."),
                        (7, "vets-service", "Provides veterinarian information.")]
    repo = init_repo(tmp_path / "repo")
    compose = "services:\n" + "".join(
        f"  {n}-service:\n    image: petclinic/{n}-service:1\n"
        for n in ("customers", "visits", "vets"))
    short = commit_tree(repo, {"docker-compose.yml": compose, "README.md": BULLETS}, "init",
                        "2026-08-03T09:00:00Z")[:7]
    described = {n.ceid: n.props.get("description") for n in batch_at(repo).nodes
                 if n.label == "Service"}
    assert described == {"service:customers-service": "Manages customer and pet data.",
                         "service:visits-service": "Manages pet visit records.",
                         "service:vets-service": "Provides veterinarian information."}
    visits = next(n for n in batch_at(repo).nodes if n.ceid == "service:visits-service")
    assert f"description|Manages pet visit records.|README.md#L6@{short}" in \
        visits.props["attribute_refs"]
