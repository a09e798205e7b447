"""Render the repository files of the demo organisation from its current state."""

from __future__ import annotations

import re

from substrate.demo.topology import InfraSpec, ServiceSpec

K8S_SERVICE_NAMES = {"recommendation": "recommendation-svc"}
K8S_FILES = {"data": "k8s/data-platform.yaml", "catalog": "k8s/recommendation.yaml"}
_BASE_IMAGES = {
    "go": "gcr.io/distroless/static:nonroot", "java": "eclipse-temurin:21-jre",
    "kotlin": "eclipse-temurin:21-jre", "python": "python:3.12-slim",
    "node": "node:20-slim", "php": "php:8.3-fpm",
}  # fmt: skip
_LANG_NAMES = {"go": "Go", "java": "Java", "kotlin": "Kotlin", "python": "Python",
               "node": "TypeScript (Node.js)", "php": "PHP"}  # fmt: skip
_PLAIN = re.compile(r"^[A-Za-z0-9_./-]+$")

COMPOSE_HEADER = """\
# acme/shop: the local development stack.
# Image tags and secrets come from .env; published ports live in docker-compose.override.yml.
name: shop

services:
"""
OVERRIDE = """\
# Local overrides: published ports and debug settings (merged over docker-compose.yml).
services:
  api-gateway:
    ports:
      - "8080:8080"
    environment:
      LOG_LEVEL: debug
  web-frontend:
    ports:
      - "3000:8080"
  currencyservice:
    environment:
      RATES_SOURCE: "${RATES_SOURCE:-fixture}"
  email-svc:
    environment:
      SMTP_HOST: "${SMTP_HOST:-localhost}"
"""
_INFRA_EXTRA = {
    "postgres": ['      POSTGRES_PASSWORD: "${POSTGRES_PASSWORD}"'],
    "redis": [],
    "bitnami/kafka": [
        '      KAFKA_CFG_NODE_ID: "1"', "      KAFKA_CFG_PROCESS_ROLES: broker,controller",
    ],
}  # fmt: skip


def _value(text: str) -> str:
    return text if _PLAIN.match(text) else f'"{text}"'


def compose_service(svc: ServiceSpec) -> list[str]:
    lines = [
        f"  {svc.key}:",
        f"    image: ghcr.io/acme/{svc.name}:${{TAG:-latest}}",
        f"    build: ./services/{svc.name}",
    ]
    if svc.hostname:
        lines.append(f"    hostname: {svc.hostname}")
    if svc.env:
        lines.append("    environment:")
        if svc.lang == "java":
            lines += [f"      - {_value(f'{k}={v}')}" for k, v in svc.env]
        else:
            lines += [f"      {k}: {_value(v)}" for k, v in svc.env]
    if svc.depends and svc.name == "orders":
        lines.append("    depends_on:")
        for dep in svc.depends:
            lines += [f"      {dep}:", "        condition: service_healthy"]
    elif svc.depends:
        lines.append("    depends_on:")
        lines += [f"      - {dep}" for dep in svc.depends]
    return lines


def compose_infra(infra: InfraSpec) -> list[str]:
    lines = [f"  {infra.name}:", f"    image: {infra.image}"]
    family = infra.image.split(":")[0]
    extra = _INFRA_EXTRA.get(family, [])
    if infra.env or extra:
        lines.append("    environment:")
        lines += [f"      {k}: {_value(v)}" for k, v in infra.env] + extra
    return lines


def compose_file(services: list[ServiceSpec], infra: list[InfraSpec]) -> str:
    lines = [line for svc in services if not svc.namespace for line in compose_service(svc)]
    lines.append("")
    lines.append("  # datastores and brokers")
    lines += [line for item in infra if not item.namespace for line in compose_infra(item)]
    return COMPOSE_HEADER + "\n".join(lines) + "\n"


def dotenv(extra: dict[str, str]) -> str:
    values = {"TAG": "2026.08", "KAFKA_HOST": "kafka", "POSTGRES_PASSWORD": "devpassword",
              "PAYMENTS_DB_PASSWORD": "devpayments", **extra}  # fmt: skip
    body = "\n".join(f"{k}={v}" for k, v in values.items())
    return f"# Local development values only; production secrets live in the vault.\n{body}\n"


def _k8s_deployment(svc: ServiceSpec) -> str:
    env = "".join(
        f"            - name: {k}\n              value: {_value(v)}\n" for k, v in svc.env
    )
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {svc.key}
  namespace: {svc.namespace}
  labels:
    app: {svc.name}
spec:
  replicas: 2
  selector:
    matchLabels:
      app: {svc.name}
  template:
    metadata:
      labels:
        app: {svc.name}
    spec:
      containers:
        - name: {svc.name}
          image: ghcr.io/acme/{svc.name}:2026.08
          ports:
            - containerPort: 8080
          env:
{env}"""


def _k8s_service(name: str, app: str, namespace: str, port: int) -> str:
    return f"""\
apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: {namespace}
spec:
  selector:
    app: {app}
  ports:
    - port: {port}
      targetPort: {port}
"""


def _k8s_statefulset(infra: InfraSpec) -> str:
    return f"""\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {infra.name}
  namespace: {infra.namespace}
spec:
  serviceName: {infra.name}
  replicas: 1
  selector:
    matchLabels:
      app: {infra.name}
  template:
    metadata:
      labels:
        app: {infra.name}
    spec:
      containers:
        - name: {infra.name}
          image: {infra.image}
"""


def k8s_files(services: list[ServiceSpec], infra: list[InfraSpec]) -> dict[str, str]:
    """One multi-document manifest per namespace."""
    docs: dict[str, list[str]] = {}
    for svc in services:
        if svc.namespace:
            name = K8S_SERVICE_NAMES.get(svc.name, svc.name)
            docs.setdefault(svc.namespace, []).extend(
                [_k8s_deployment(svc), _k8s_service(name, svc.name, svc.namespace, 8080)]
            )
    for item in infra:
        if item.namespace:
            docs.setdefault(item.namespace, []).extend(
                [_k8s_statefulset(item), _k8s_service(item.name, item.name, item.namespace, 9000)]
            )
    return {K8S_FILES[ns]: "---\n".join(parts) for ns, parts in sorted(docs.items())}


def codeowners(rules: list[tuple[str, str]]) -> str:
    """Rules as ``(pattern, owners)``; a pattern starting with ``#`` (or empty) is a comment."""
    lines = [p if not p or p.startswith("#") else f"{p:<34}{o}".rstrip() for p, o in rules]
    return "\n".join(lines) + "\n"


def readme(svc: ServiceSpec) -> str:
    runs = (
        f"Kubernetes, namespace `{svc.namespace}`"
        if svc.namespace
        else f"docker compose, service `{svc.key}`"
    )
    return (
        f"# {svc.name}\n\n{svc.summary}\n\n- Language: {_LANG_NAMES[svc.lang]}\n"
        f"- Runs on: {runs}\n- Port: 8080\n"
    )


def dockerfile(svc: ServiceSpec) -> str:
    base = _BASE_IMAGES[svc.lang]
    return f'FROM {base}\nCOPY build/ /app/\nEXPOSE 8080\nCMD ["/app/{svc.name}"]\n'
