"""A service's own Dockerfile sets its peers' names as ``ENV`` defaults (an nginx front end's
``ENV CATALOGUE_HOST=catalogue ...``): read from the final stage, each variable at its own line,
and left to the deployment where the deployment sets the same variable."""

from __future__ import annotations

from pathlib import Path

from substrate.connectors.dockerfile_env import env_defaults, exposed_ports
from substrate.connectors.gitrepo import batch_at
from substrate.connectors.path_filter import is_relevant
from substrate.demo.gitwriter import commit_tree, init_repo

DOCKERFILE = """\
FROM golang:1.22 AS build
ENV BUILD_HOST=builder
RUN go build ./...

FROM nginx:1.27
EXPOSE 8080
ENV CATALOG_HOST=catalog \\
    CART_HOST="cart" \\
    LOG_LEVEL=info
ENV ORDERS_URL http://orders:8080/api
"""


def test_final_stage_env_each_variable_at_its_line() -> None:
    found = [(k, f.value, f.line) for k, f in env_defaults(DOCKERFILE, "web/Dockerfile")]
    assert found == [("CATALOG_HOST", "catalog", 7), ("CART_HOST", "cart", 8),
                     ("LOG_LEVEL", "info", 9), ("ORDERS_URL", "http://orders:8080/api", 10)]


def test_a_malformed_instruction_does_not_stop_the_reading() -> None:
    found = env_defaults('FROM x\nENV A="open\nENV B_HOST=b\n', "Dockerfile")
    assert ("B_HOST", "b", 3) in [(k, f.value, f.line) for k, f in found]


COMPOSE = """\
services:
  web:
    build: ./web
    environment:
      CART_HOST: cart-v2
  catalog:
    image: shop/catalog
  cart:
    image: shop/cart
  cart-v2:
    image: shop/cart
  orders:
    image: shop/orders
"""


def test_dockerfile_defaults_are_edges_unless_the_deployment_sets_the_variable(
        tmp_path: Path) -> None:
    repo = tmp_path / "r"
    init_repo(repo)
    sha = commit_tree(repo, {"docker-compose.yml": COMPOSE, "web/Dockerfile": DOCKERFILE},
                      "init", "2026-01-01T00:00:00Z")[:7]
    edges = {(e.dst, e.evidence_ref, e.props.get("via")) for e in batch_at(repo).edges
             if e.src == "service:web" and e.type == "CALLS"}
    assert edges == {
        ("service:catalog", f"web/Dockerfile#L7@{sha}", "dockerfile"),
        ("service:orders", f"web/Dockerfile#L10@{sha}", "dockerfile"),
        ("service:cart-v2", f"docker-compose.yml#L5@{sha}", "env"),  # the deployment's value
    }


def test_a_dockerfile_edit_is_replayed() -> None:
    """Its ENV defaults are read, so an edit matters to the history replay's path filter
    (other build files only by their presence)."""
    assert is_relevant(("M", "web/Dockerfile"))
    assert not is_relevant(("M", "web/Dockerfile.dev")) and is_relevant(("A", "web/Dockerfile.dev"))


def test_a_config_file_copied_into_the_image_names_peers(tmp_path: Path) -> None:
    """``COPY nginx.conf /etc/nginx/conf.d/default.conf``: its ``proxy_pass`` names the API;
    a file of another stage (``--from``) and a copied folder are not read."""
    dockerfile = ("FROM node:20 AS build\nCOPY . .\nRUN npm run build\n\nFROM nginx:1.27\n"
                  "COPY --from=build /app/dist /usr/share/nginx/html\n"
                  "COPY nginx.conf /etc/nginx/conf.d/default.conf\nCOPY conf/ /etc/extra/\n")
    nginx = ("server {\n  listen 80;\n  location /api/ {\n    proxy_pass http://api:8000/;\n"
             "  }\n}\n")
    compose = ("services:\n  frontend:\n    build: ./frontend\n  api:\n    image: shop/api\n"
               "  search:\n    image: shop/search\n")
    repo = tmp_path / "r"
    init_repo(repo)
    sha = commit_tree(repo, {"docker-compose.yml": compose, "frontend/Dockerfile": dockerfile,
                             "frontend/nginx.conf": nginx,
                             "frontend/conf/extra.conf": "upstream s { server search:9000; }\n"},
                      "init", "2026-01-01T00:00:00Z")[:7]
    edges = {(e.dst, e.evidence_ref, e.props.get("via")) for e in batch_at(repo).edges
             if e.src == "service:frontend" and e.type == "CALLS"}
    assert edges == {("service:api", f"frontend/nginx.conf#L4@{sha}", "image_config")}


def test_the_ports_an_image_exposes_are_its_own_when_no_deployment_states_any(
        tmp_path: Path) -> None:
    """Robot Shop's shipping: "EXPOSE 8080" and no port in its Compose service; a service
    whose Compose service publishes a port keeps that one."""
    assert [(f.value, f.line) for f in exposed_ports(
        "FROM node:20\nEXPOSE 8080/tcp 9090\nEXPOSE $PORT\n", "x/Dockerfile")] == [
            ("8080", 2), ("9090", 2)]
    assert exposed_ports(DOCKERFILE, "web/Dockerfile")[0].line == 6  # the final stage's
    repo = tmp_path / "r"
    init_repo(repo)
    compose = ("services:\n  shipping:\n    build: shipping\n"
               "  web:\n    build: web\n    ports:\n      - 8081:8080\n")
    sha = commit_tree(repo, {"docker-compose.yml": compose,
                             "shipping/Dockerfile": "FROM openjdk:17\nEXPOSE 8080\n",
                             "web/Dockerfile": DOCKERFILE}, "init", "2026-01-01T00:00:00Z")[:7]
    nodes = {n.ceid: n.props for n in batch_at(repo).nodes}
    assert nodes["service:shipping"]["ports"] == ["8080"]
    assert f"port|8080|shipping/Dockerfile#L2@{sha}" in nodes["service:shipping"]["attribute_refs"]
    assert nodes["service:web"]["ports"] == ["8081:8080"]
