""".NET Aspire app hosts (substrate/connectors/aspire.py): resources, their wiring and the
folders of their code, read with the C# grammar. The app host below is written for these
tests in the shape of Aspire's own samples (dotnet/eShop's src/eShop.AppHost/Program.cs):
top-level statements, fluent chains, a database added to its server, an endpoint variable
passed in the environment, wiring inside an ``if`` that these tests expect left out."""

from __future__ import annotations

from pathlib import Path

from substrate.connectors.aspire import is_app, is_apphost_path, read_apphost
from substrate.connectors.gitrepo import batch_at
from substrate.connectors.path_filter import is_read
from substrate.demo.gitwriter import commit_tree, init_repo

APPHOST = """using Microsoft.Extensions.Hosting;

var builder = DistributedApplication.CreateBuilder(args);

var cache = builder.AddRedis("cache");
var broker = builder.AddRabbitMQ("messaging");
var pg = builder.AddPostgres("pg").WithDataVolume();
var inventoryDb = pg.AddDatabase("inventorydb");
var apiKey = builder.AddParameter("api-key", secret: true);
const string gatewayName = "edge";

var inventory = builder.AddProject<Projects.Inventory_Api>("inventory-api")
    .WithReference(inventoryDb)
    .WaitFor(inventoryDb)
    .WithReference(broker);

var inventoryUrl = inventory.GetEndpoint("https");

builder.AddProject<Projects.Shipping_Worker>("shipping-worker")
    .WithReference(broker)
    .WithEnvironment("Inventory__Url", inventoryUrl);

var storefront = builder.AddNpmApp("storefront", "../storefront")
    .WithReference(inventory)
    .WithEnvironment("API_KEY", apiKey);

builder.AddContainer(gatewayName, "envoyproxy/envoy", "v1.30")
    .WithReference(storefront);

storefront.WithReference(cache);

if (builder.Environment.IsDevelopment())
{
    var mail = builder.AddContainer("mailpit", "axllent/mailpit");
    inventory.WithReference(mail);
}

builder.Build().Run();
"""
PATH = "src/Shop.AppHost/Program.cs"


def test_app_host_files_are_the_csharp_files_of_an_apphost_folder() -> None:
    assert is_apphost_path(PATH) and is_apphost_path("AppHost/AppHost.cs")
    assert is_apphost_path("src/eShop.AppHost/Extensions.cs")
    assert not is_apphost_path("src/Inventory.Api/Program.cs")
    assert not is_apphost_path("src/Shop.AppHost/Shop.AppHost.csproj")
    assert is_read(PATH)  # a history replay reads the commits that change one
    assert read_apphost("src/Web.AppHost/Program.cs", "var x = 1;\n") is None  # no builder


def test_resources_and_their_wiring_with_the_lines_that_say_so() -> None:
    host = read_apphost(PATH, APPHOST)
    assert host is not None
    declared = {r.name.value: (r.method, r.name.line, r.parent)
                for r in host.resources.values()}
    assert declared == {
        "cache": ("AddRedis", 5, None), "messaging": ("AddRabbitMQ", 6, None),
        "pg": ("AddPostgres", 7, None), "inventorydb": ("AddDatabase", 8, "pg"),
        "inventory-api": ("AddProject", 12, None),
        "shipping-worker": ("AddProject", 19, None), "storefront": ("AddNpmApp", 23, None),
        "edge": ("AddContainer", 27, None),  # named by a const string
    }  # no parameter; nothing from inside the if
    names = {key: r.name.value for key, r in host.resources.items()}
    wires = [(names[w.owner], names[w.target], w.via, w.line, w.var) for w in host.wires]
    assert wires == [
        ("inventory-api", "inventorydb", "reference", 13, None),
        ("inventory-api", "inventorydb", "wait_for", 14, None),
        ("inventory-api", "messaging", "reference", 15, None),
        ("shipping-worker", "messaging", "reference", 20, None),
        ("shipping-worker", "inventory-api", "env", 21, "Inventory__Url"),  # its endpoint
        ("storefront", "inventory-api", "reference", 24, None),
        ("edge", "storefront", "reference", 28, None),
        ("storefront", "cache", "reference", 30, None),  # a statement on the variable
    ]
    by_name = {r.name.value: r for r in host.resources.values()}
    assert by_name["inventory-api"].project == "Inventory_Api"
    assert by_name["storefront"].folder == "src/storefront"
    assert by_name["edge"].image is not None and by_name["edge"].image.value == "envoyproxy/envoy"


NEWER_APPHOST = """var builder = DistributedApplication.CreateBuilder(args);

var redis = builder.AddRedis("redis");
var basket = builder.AddDotnetProject("basket-api", "../Basket.API")
    .WithReference(redis);
redis.WithParentRelationship(basket);
var catalog = builder.AddDotnetProject("catalog-api", "../Catalog.API");

builder.AddYarp("mobile-bff")
    .ConfigureMobileBffRoutes(catalog, basket);
var identity = builder.AddProject<Projects.Identity_API>("identity-api");
basket.WithEnvironment("Identity__Url", identity.GetEndpoint("https"));
identity.WithEnvironment("BasketApiClient", basket.GetEndpoint("http"))
        .WithEnvironment("CatalogApiClient", catalog.GetEndpoint("http"))
        .WithEnvironment("Orders__Url", basket.GetEndpoint("http"));

builder.Build().Run();
"""


def test_other_project_methods_a_yarp_proxy_and_an_extension_method_s_wiring() -> None:
    """Any Add<X>Project with a folder (newer Aspire's ``AddDotnetProject``) is an app built
    from that folder; a YARP proxy is an app; an app host's own extension method given
    resources (``ConfigureMobileBffRoutes(catalog, basket)``) wires its owner to each of
    them, while ``WithParentRelationship`` (a dashboard grouping) wires nothing. An identity
    server given a client app's URL under a client's name, by an app that wires to it, only
    sends users back there: no wire (an unrelated name, or an app that does not wire back,
    still does)."""
    host = read_apphost(PATH, NEWER_APPHOST)
    assert host is not None
    by_name = {r.name.value: r for r in host.resources.values()}
    assert by_name["basket-api"].folder == "src/Basket.API"
    assert {name: is_app(r.method) for name, r in by_name.items()} == {
        "redis": False, "basket-api": True, "catalog-api": True, "mobile-bff": True,
        "identity-api": True}
    names = {key: r.name.value for key, r in host.resources.items()}
    assert [(names[w.owner], names[w.target], w.via, w.line) for w in host.wires] == [
        ("basket-api", "redis", "reference", 5),
        ("mobile-bff", "catalog-api", "argument", 10),
        ("mobile-bff", "basket-api", "argument", 10),
        ("basket-api", "identity-api", "env", 12),
        ("identity-api", "catalog-api", "env", 14),
        ("identity-api", "basket-api", "env", 15),
    ]


def test_an_app_host_in_a_repository_gives_services_infrastructure_and_edges(
        tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {
        PATH: APPHOST,
        "src/Shop.AppHost/Shop.AppHost.csproj": "<Project Sdk=\"Aspire.AppHost.Sdk\"/>\n",
        "src/Inventory.Api/Inventory.Api.csproj": "<Project Sdk=\"Microsoft.NET.Sdk.Web\"/>\n",
        "src/Shipping.Worker/Shipping.Worker.csproj": "<Project Sdk=\"Microsoft.NET.Sdk\"/>\n",
        "src/storefront/package.json": "{\"name\": \"storefront\"}\n",
    }, "init", "2026-08-03T09:00:00Z")
    batch = batch_at(repo)
    nodes = {n.ceid: n for n in batch.nodes}
    services = {c for c, n in nodes.items() if n.label == "Service"}
    assert services == {"service:inventory-api", "service:shipping-worker",
                        "service:storefront", "service:edge"}
    kinds = {c: n.props["kind"] for c, n in nodes.items() if n.label == "Infrastructure"}
    assert kinds == {"infra:cache": "cache", "infra:messaging": "queue", "infra:pg": "database",
                     "infra:inventorydb": "database"}
    assert nodes["service:inventory-api"].props["path"] == "src/Inventory.Api/"
    assert nodes["service:storefront"].props["path"] == "src/storefront/"
    assert nodes["service:inventory-api"].provenance[0].startswith(f"{PATH}#L12@")
    edges = {(e.type, e.src, e.dst): e for e in batch.edges if e.src.startswith(
        ("service:", "infra:")) and e.type in ("CALLS", "DEPENDS_ON")}
    assert set(edges) == {
        ("DEPENDS_ON", "infra:inventorydb", "infra:pg"),
        ("DEPENDS_ON", "service:inventory-api", "infra:inventorydb"),
        ("DEPENDS_ON", "service:inventory-api", "infra:messaging"),
        ("DEPENDS_ON", "service:shipping-worker", "infra:messaging"),
        ("CALLS", "service:shipping-worker", "service:inventory-api"),
        ("CALLS", "service:storefront", "service:inventory-api"),
        ("CALLS", "service:edge", "service:storefront"),
        ("DEPENDS_ON", "service:storefront", "infra:cache"),
    }
    call = edges[("CALLS", "service:shipping-worker", "service:inventory-api")]
    assert call.evidence_ref.startswith(f"{PATH}#L21@") and call.confidence == 1.0
    assert call.props == {"via": "aspire_env", "var": "Inventory__Url"}
