"""Peers named in a service's own source code: address literals (a default beside the variable
that may override it, a client's base URL) and Spring Cloud OpenFeign clients; and the replay
path filter, which parses a commit changing source files only when their texts name one."""

from __future__ import annotations

from pathlib import Path

from substrate.connectors.gitrepo import batch_at
from substrate.connectors.path_filter import content_hits, is_read, needed_commits
from substrate.connectors.source_calls import is_source_path, peers_in, same_platform
from substrate.demo.gitwriter import commit_tree, init_repo

COMPOSE = """\
services:
  web:
    build: ./web
    environment:
      DATABASE_URL: postgres://db:5432/app
      SEARCH_URL: http://search:9200
  api:
    build: ./api
  search:
    image: opensearchproject/opensearch:2
  db:
    image: postgres:16
  clamav:
    image: ajilaag/clamav-rest
"""

SETTINGS = """\
import os

API_URL = os.environ.get("API_URL", "http://api:3000")
SEARCH_URL = os.environ.get(
    "SEARCH_URL", "http://search:9200"
)
DOCS = "https://docs.example.com/api"
LOCAL = "http://localhost:8000"
"""

SCANNER = """\
import requests


def scan(file):
    return requests.post("http://clamav:9000/v2/scan", files={"file": file})
"""

FEIGN = """\
package com.piggymetrics.account.client;

@FeignClient(
    name = "statistics-service", fallback = StatisticsServiceClientFallback.class)
public interface StatisticsServiceClient {
}
"""

CF_MANIFEST = """\
applications:
  - name: web-prod
    path: ../web
    memory: 512M
"""


def _pairs(line: str) -> list[tuple[str, str]]:
    """``(key, value)`` of each peer a line names."""
    return [(k, v) for k, v, _, _ in peers_in(line)]


def test_only_source_files_outside_tests_and_vendored_code_are_read() -> None:
    assert is_source_path("web/app/settings.py") and is_source_path("src/cart/main.go")
    assert is_source_path("account-service/src/main/java/x/Client.java")
    assert not is_source_path("web/tests/test_settings.py")
    assert not is_source_path("src/cart/main_test.go")
    assert not is_source_path("ui/src/app.spec.ts") and not is_source_path("ui/app.test.js")
    assert not is_source_path("ui/node_modules/axios/index.js")
    assert not is_source_path("account-service/src/test/java/x/ClientTest.java")
    assert not is_source_path("web/settings.yaml") and not is_source_path("README.md")


def test_address_literals_inside_a_network_are_peers_internet_names_are_not() -> None:
    found = [(key, value, line, sorted(names)) for key, value, line, names in peers_in(SETTINGS)]
    assert found == [
        ("url", "http://api:3000", 3, ["API_URL"]),
        ("url", "http://search:9200", 5, ["SEARCH_URL"]),  # the variable on the line before
    ]
    k8s = 'LEDGER = "http://ledgerwriter.bank.svc.cluster.local:8080/transactions"\n'
    assert [v for _, v, _, _ in peers_in(k8s)] == [
        "http://ledgerwriter.bank.svc.cluster.local:8080/transactions"]
    assert peers_in('u = "file://tmp/x"; v = "http://127.0.0.1:80"; w = `http://${host}/`\n') == []


def test_a_feign_client_names_the_service_it_calls_even_over_two_lines() -> None:
    assert [(k, v, line) for k, v, line, _ in peers_in(FEIGN)] == [
        ("feign_service", "statistics-service", 4)]
    assert [v for _, v, _, _ in peers_in('@FeignClient("auth-service")\n')] == ["auth-service"]


def test_same_platform_compares_how_two_entities_are_deployed() -> None:
    assert same_platform({"deployed_by": ["compose"]}, {"deployed_by": ["compose", "k8s"]})
    assert not same_platform({"deployed_by": ["cloudfoundry"]}, {"deployed_by": ["compose"]})
    assert same_platform({}, {"deployed_by": ["compose"]})  # deployed by nothing we read


def test_source_defaults_and_client_urls_become_calls_where_they_apply(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    sha = commit_tree(repo, {
        "docker-compose.yml": COMPOSE,
        "web/Dockerfile": "FROM python:3.12\n",
        "web/app/settings.py": SETTINGS,
        "web/app/scanner.py": SCANNER,
        "web/tests/test_api.py": 'URL = "http://db:5432"\n',
        "api/Dockerfile": "FROM python:3.12\n",
    }, "init", "2026-08-03T09:00:00Z")[:7]
    batch = batch_at(repo)
    source = {(e.type, e.src, e.dst, e.evidence_ref) for e in batch.edges
              if e.props.get("via") == "source_code"}
    assert source == {
        ("CALLS", "service:web", "service:api", f"web/app/settings.py#L3@{sha}"),
        ("CALLS", "service:web", "service:clamav", f"web/app/scanner.py#L5@{sha}"),
    }  # SEARCH_URL is set by the deployment: its default is not used; tests are not read
    search = next(e for e in batch.edges if e.src == "service:web" and e.dst.endswith("search"))
    assert search.props["via"] == "env"
    call = next(e for e in batch.edges if e.dst == "service:api")
    assert call.confidence < 0.95 and call.props["source_file"] == "web/app/settings.py"


def test_a_default_does_not_link_code_deployed_elsewhere_to_a_compose_peer(
        tmp_path: Path) -> None:
    """The same folder deployed by Compose (local development) and by Cloud Foundry: the
    Cloud Foundry app does not call what only the Compose file runs."""
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {
        "docker-compose.yml": COMPOSE, "web/Dockerfile": "FROM python:3.12\n",
        "web/app/scanner.py": SCANNER, "manifests/manifest.yml": CF_MANIFEST,
    }, "init", "2026-08-03T09:00:00Z")
    calls = {(e.src, e.dst) for e in batch_at(repo).edges if e.props.get("via") == "source_code"}
    assert ("service:web", "service:clamav") in calls
    assert not any(src == "service:web-prod" for src, _ in calls)


def test_the_path_filter_parses_source_changes_only_where_a_text_names_a_peer(
        tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    base = {"docker-compose.yml": COMPOSE, "web/Dockerfile": "FROM python:3.12\n",
            "web/app/views.py": "def index():\n    return 'ok'\n"}
    shas = [commit_tree(repo, base, "init", "2026-08-01T09:00:00Z")]
    views = "def index():\n    return 'hello'\n"
    shas.append(commit_tree(repo, {**base, "web/app/views.py": views}, "no peer",
                            "2026-08-02T09:00:00Z"))
    named = {**base, "web/app/views.py": views, "web/app/scanner.py": SCANNER}
    shas.append(commit_tree(repo, named, "a peer", "2026-08-03T09:00:00Z"))
    moved = {**named, "web/app/scanner.py": "# the scanner\n" + SCANNER}
    shas.append(commit_tree(repo, moved, "its line moves", "2026-08-04T09:00:00Z"))
    shas.append(commit_tree(repo, {**moved, "web/app/views.py": "def index():\n    pass\n"},
                            "no peer again", "2026-08-05T09:00:00Z"))
    assert is_read("web/app/views.py")  # by its path; its text decides the rest
    hits = content_hits(repo)
    assert hits[shas[2]] == frozenset({"web/app/scanner.py"}) and not hits.get(shas[1])
    assert needed_commits(repo, shas) == {shas[0], shas[2], shas[3]}


def test_shapes_of_real_code() -> None:
    """Lines of Sock Shop, robot-shop, spring-petclinic-microservices, piggymetrics and Online
    Boutique: a format placeholder cuts the URL, a host that is one names nothing; an address
    variable's default beside it is a host; comments and ``php://`` are not peers."""
    assert _pairs('catalogueUrl: util.format("http://catalogue%s", domain),') == [
        ("url", "http://catalogue")]
    assert _pairs('.uri("http://customers-service/owners/{ownerId}", ownerId)') == [
        ("url", "http://customers-service/owners/")]
    assert _pairs('String.format("http://%s/shipping/", getenv("CART_ENDPOINT", "cart"))') == [
        ("CART_ENDPOINT", "cart")]
    assert _pairs("var catalogueHost = process.env.CATALOGUE_HOST || 'catalogue'") == [
        ("CATALOGUE_HOST", "catalogue")]
    assert _pairs('addr := getEnv("PRODUCT_CATALOG_SERVICE_ADDR", "productcatalogservice:3550")'
                 ) == [("PRODUCT_CATALOG_SERVICE_ADDR", "productcatalogservice:3550")]
    assert _pairs('@Value("${CART_HOST:cart}") String cartHost;') == [("CART_HOST", "cart")]
    assert _pairs('url = "jdbc:mysql://mysql:3306/cities"') == [
        ("url", "jdbc:mysql://mysql:3306/cities")]
    assert _pairs('store: new RedisStore({host: "session-db"}),') == [("HOST", "session-db")]
    assert _pairs('rdb := redis.NewClient(&redis.Options{Addr: "redis-cart:6379"})') == [
        ("ADDR", "redis-cart:6379")]
    assert _pairs('app.run(host="0.0.0.0")') == [] and _pairs('r = Redis(host=cfg.host)') == []
    assert _pairs('@FeignClient(url = "${rates.url}", name = "rates-client")') == [
        ("feign_service", "rates-client")]
    for line in ('DB_HOST = os.getenv("DB_HOST", "localhost")', "fopen('php://stdout', 'w');",
                 '// was: new Client("http://legacy-svc:8080")', 'x = f"http://{host}:8080/"',
                 'String.format("jdbc:mysql://%s/cities", host)',
                 'API_URL = os.getenv("API_URL", "api.example.com")',
                 "for var in ['TRANSACTIONS_API_ADDR', 'BALANCES_API_ADDR']:"):
        assert _pairs(line) == [], line
    petclinic = ("spring-petclinic-api-gateway/src/main/java/org/springframework/samples/"
                 "petclinic/api/application/VisitsServiceClient.java")
    assert is_source_path(petclinic) and not is_source_path("samples/a/src/main/java/A.java")


def test_a_minified_file_is_read_in_windows_around_each_match() -> None:
    """A bundle is one long line: each match reads at most a window of it (a whole-line read
    per match made such a file quadratic), and the line number stays right."""
    bundle = "var a=1;" * 50_000 + 'fetch("http://cart:8080/items");' * 2_000 + "var b=2;" * 50_000
    found = peers_in("// built\n" + bundle + "\n")
    assert len(found) == 2_000 and {(k, v, line) for k, v, line, _ in found} == {
        ("url", "http://cart:8080/items", 2)}


def test_commented_out_blocks_name_no_peer() -> None:
    """A block comment that opens a line hides what it holds to its ``*/`` (code after the
    ``*/`` still counts); a ``"*/*"`` inside a string opens none."""
    text = "\n".join([
        'const a = "http://cart:8080";',             # 1: code
        "/*",                                         # 2
        'const b = "http://legacy:8080";',           # 3: commented out
        "   */",                                      # 4
        '  /* old */ const c = "http://orders";',    # 5: opens a line: hidden
        "/* x",                                       # 6
        'old(); */ const d = "http://user:80";',     # 7: after the */: code
        'fetch(u, {headers: {Accept: "*/*"}});',     # 8
        'const e = "http://catalogue";',             # 9: code
    ])
    assert [(v, n) for _, v, n, _ in peers_in(text)] == [
        ("http://cart:8080", 1), ("http://user:80", 7), ("http://catalogue", 9)]


def test_grpc_channels_and_broker_lists_name_their__pairs() -> None:
    """A gRPC channel's literal target (Go, Python, Java, a Node client's constructor) and a
    Kafka client's broker list or ``bootstrap.servers``; ``net.Dial``'s first argument is a
    network, not a host, and a target in a variable names nothing here."""
    assert _pairs('conn, err := grpc.Dial("checkout:5050", grpc.WithInsecure())') == [
        ("ADDR", "checkout:5050")]
    assert _pairs('conn, err := grpc.DialContext(ctx, "dns:///cart:7070")') == [
        ("ADDR", "cart:7070")]
    assert _pairs('channel = grpc.insecure_channel("recommendation:8080")') == [
        ("ADDR", "recommendation:8080")]
    assert _pairs('ManagedChannelBuilder.forAddress("ad", 9555).usePlaintext().build();') == [
        ("ADDR", "ad")]
    assert _pairs('new CartService("cart:7070", grpc.credentials.createInsecure());') == [
        ("ADDR", "cart:7070")]
    assert _pairs("const kafka = new Kafka({ brokers: ['kafka:9092'] })") == [
        ("BROKERS", "kafka:9092")]
    assert _pairs("conf = {'bootstrap.servers': 'kafka:9092'}") == [
        ("BOOTSTRAP.SERVERS", "kafka:9092")]
    for line in ('net.Dial("tcp", "db:5432")', "ManagedChannelBuilder.forTarget(target)",
                 'grpc.insecure_channel("localhost:50051")',
                 "new CartService(addr, grpc.credentials.createInsecure());"):
        assert _pairs(line) == [], line


def test_more_default_shapes_ruby_node_rust_and_flags() -> None:
    """An environment read by index (Ruby, Node) or through Rust's ``unwrap_or``, and a
    command-line flag's default when the flag's name says it is an address."""
    assert _pairs("host = ENV['CART_HOST'] || 'cart'") == [("CART_HOST", "cart")]
    assert _pairs('const h = process.env["CART_HOST"] ?? "cart";') == [("CART_HOST", "cart")]
    assert _pairs('let a = std::env::var("CART_ADDR").unwrap_or_else(|_| "cart:7070".into());'
                 ) == [("CART_ADDR", "cart:7070")]
    assert _pairs('addr := flag.String("cart-addr", "cart:7070", "where the cart listens")') == [
        ("CART_ADDR", "cart:7070")]
    assert _pairs('parser.add_argument("--redis-host", default="redis")') == [
        ("REDIS_HOST", "redis")]
    for line in ('flag.StringVar(&cfg.listen, "listen-addr", ":8080", "")',
                 'flag.String("name", "cart", "")', 'parser.add_argument("--port", default="80")'):
        assert _pairs(line) == [], line
