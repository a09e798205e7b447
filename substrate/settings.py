"""One frozen settings object, read from the environment once and passed explicitly.

Every variable name here is also used by ``compose.yaml`` (a test checks that they agree).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from substrate.stack.credentials import (
    NATS_PASSWORD,
    NEO4J_PASSWORD,
    POSTGRES_PASSWORD,
    REDIS_PASSWORD,
    read_secret,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent

# name -> default; the single list of environment variables the product reads.
ENV_DEFAULTS: dict[str, str] = {
    "SUBSTRATE_HOME": str(PROJECT_ROOT / ".substrate"),
    "SUBSTRATE_TENANT": "acme",
    "NEO4J_URI": "bolt://127.0.0.1:7687",
    "NEO4J_HTTP_PORT": "7474",
    "NEO4J_USER": "neo4j",
    "NEO4J_PASSWORD": "",  # empty: generated at first start, kept in the state directory
    "NEO4J_HEAP": "4g",
    "NEO4J_PAGECACHE": "4g",
    # empty: embedded PostgreSQL 16 + pgvector from the pgserver wheel, user postgres with the
    # password generated into secrets/postgres_password (SCRAM-SHA-256)
    "POSTGRES_DSN": "",
    "POSTGRES_PORT": "5432",
    # a loopback URL without a password gets the generated user + password (secrets/)
    "REDIS_URL": "redis://127.0.0.1:6379/0",
    "REDIS_CLUSTER": "0",  # 1: REDIS_URL is a startup node of a Redis Cluster
    # one server URL or a comma-separated list (the servers of a NATS cluster)
    "NATS_URL": "nats://127.0.0.1:4222",
    "GATEWAY_HOST": "127.0.0.1",
    "GATEWAY_PORT": "8080",
    "ALLOWED_HOSTS": "",  # Host header allow-list (comma-separated); empty: loopback names
    "ALLOWED_ORIGINS": "",  # WebSocket Origin allow-list; empty: the gateway's own origins
    "OIDC_JWKS_URL": "",  # bearer JWTs: signing keys from this JWKS URL ...
    "OIDC_JWKS_FILE": "",  # ... or this JWKS file; both empty: JWTs are not accepted
    "OIDC_ISSUER": "",
    "OIDC_AUDIENCE": "substrate",
    "OIDC_CLAIMS": "tenants=tenants,clearance=clearance,roles=roles,jurisdictions=jurisdictions",
    "UPSTREAM_IDENTITY_SECRET": "",  # HS256 key of a trusted upstream's X-Substrate-Identity
    "EMBEDDING_URL": "",  # OpenAI-compatible /v1/embeddings base URL; empty: local MiniLM
    "EMBEDDING_MODEL": "all-MiniLM-L6-v2",
    "EMBEDDING_DIM": "384",
    "CHAT_URL": "",  # OpenAI-compatible chat endpoint base URL; empty: deterministic fallbacks
    "CHAT_MODEL": "",
    "RERANK_URL": "",  # bge-reranker style /rerank endpoint; empty: local reranker
    # model roles (substrate/llm/roles.py), each an optional OpenAI-compatible endpoint;
    # explain falls back to CHAT_URL/CHAT_MODEL, cypher to explain
    "MODEL_CYPHER_URL": "", "MODEL_CYPHER_NAME": "", "MODEL_CYPHER_TIMEOUT_SECONDS": "10",
    "MODEL_EXPLAIN_URL": "", "MODEL_EXPLAIN_NAME": "", "MODEL_EXPLAIN_TIMEOUT_SECONDS": "30",
    "MODEL_SCOUT_URL": "", "MODEL_SCOUT_NAME": "", "MODEL_SCOUT_TIMEOUT_SECONDS": "60",
    "MODEL_MAX_RETRIES": "2",  # retries with exponential backoff (connection errors, 429, 5xx)
    "MODEL_CONCURRENCY": "4",  # requests in flight per role, per replica
    "MODEL_COSTS": "",  # "role=USD per 1000 tokens,...": cost in each response's accounting
    "NL_CYPHER_TRANSLATOR": "auto",  # auto (embedded, then the cypher role) | embedded | model
    "HYDE_THRESHOLD": "0.55",  # HyDE when the best raw cosine is below this (RSN-03)
    "VERIFY_THRESHOLD": "0.92",
    "INTENT_THRESHOLD": "0.6",
    "CACHE_TTL_SECONDS": "900",
    "PLAN_KEEP_SECONDS": "30",  # the gateway re-runs its recent reads' plans this often (0: off)
    "CYPHER_ROW_LIMIT": "1000",
    "CYPHER_TIMEOUT_SECONDS": "10",
    "CYPHER_MAX_BYTES": "4194304",
    "NEO4J_TX_MEMORY": "256m",
    "MAX_BODY_BYTES": "65536",  # request bodies, counted while they stream in (413 beyond)
    "RATE_LIMIT_PER_MINUTE": "1200",  # per principal (or client address), GCRA in Redis
    "RATE_LIMIT_BURST": "200",
    "MAX_CONCURRENT_PER_PRINCIPAL": "16",  # requests in flight per principal, per replica
    # load shedding (gateway/shedding.py): every request answers within the deadline (503 +
    # Retry-After past it); at most MAX_INFLIGHT run, MAX_QUEUED wait up to QUEUE_WAIT
    "REQUEST_DEADLINE_SECONDS": "20", "MAX_INFLIGHT_REQUESTS": "8",
    "MAX_QUEUED_REQUESTS": "32", "QUEUE_WAIT_SECONDS": "3",
    "PII_REDACTION": "on",  # on|off: PII and secrets redacted from contexts and responses
    "OPA_URL": "",  # Open Policy Agent base URL; empty: the built-in policy rules
    "OPA_TIMEOUT_SECONDS": "2",  # an OPA that does not answer in time denies (503)
    # observability (substrate/observability): JSON or text logs; OTLP/HTTP traces when the
    # endpoint is set; /metrics also opens to this bearer token (empty: admin role only)
    "LOG_FORMAT": "json", "LOG_LEVEL": "INFO",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "", "OTEL_SERVICE_NAME": "substrate-gateway",
    "METRICS_TOKEN": "",
}

REDIS_USER = "substrate"  # the ACL user of the local Redis (its default user is off)
NATS_USER = "substrate"
POSTGRES_USER = "postgres"
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def with_credentials(url: str, user: str, password: str) -> str:
    """``url`` with ``user``:``password`` when it names a loopback host and has no password of
    its own (an explicit one always wins); unchanged when there is no generated password."""
    parts = urlsplit(url)
    if not password or parts.password or (parts.hostname or "") not in _LOOPBACK:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    name = parts.username or user
    return urlunsplit(parts._replace(netloc=f"{quote(name, safe='')}:{quote(password, safe='')}"
                                            f"@{host}"))


def redact_url(url: str) -> str:
    """The URL with its password replaced by ``***`` (for status output and logs)."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def _csv(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _get(env: Mapping[str, str], name: str) -> str:
    return env.get(name, ENV_DEFAULTS[name]) or ENV_DEFAULTS[name]



_MEMORY_SIZE = re.compile(r"^(\d+)([kmg]?)$", re.IGNORECASE)
_MEMORY_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def memory_bytes(size: str) -> int:
    """A Neo4j memory size (``256m``, ``4g``, ``512k``, ``4096``) in bytes; ValueError when
    it is not one."""
    match = _MEMORY_SIZE.match(size)
    if match is None:
        raise ValueError(f"not a Neo4j memory size: {size!r}")
    return int(match.group(1)) * _MEMORY_UNITS[match.group(2).lower()]

@dataclass(frozen=True)
class Settings:
    home: Path
    tenant: str
    neo4j_uri: str
    neo4j_http_port: int
    neo4j_user: str
    neo4j_password_env: str
    neo4j_heap: str
    neo4j_pagecache: str
    postgres_dsn_env: str
    postgres_port: int
    redis_url_env: str
    redis_cluster: bool
    nats_url_env: str
    gateway_host: str
    gateway_port: int
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]
    oidc_jwks_url: str
    oidc_jwks_file: str
    oidc_issuer: str
    oidc_audience: str
    oidc_claims: dict[str, str]
    upstream_identity_secret: str
    embedding_url: str
    embedding_model: str
    embedding_dim: int
    chat_url: str
    chat_model: str
    rerank_url: str
    verify_threshold: float
    intent_threshold: float
    cache_ttl_seconds: int
    plan_keep_seconds: float
    cypher_row_limit: int
    cypher_timeout_seconds: float
    cypher_max_bytes: int
    neo4j_tx_memory: str
    max_body_bytes: int
    rate_limit_per_minute: int
    rate_limit_burst: int
    max_concurrent_per_principal: int
    request_deadline_seconds: float
    max_inflight_requests: int
    max_queued_requests: int
    queue_wait_seconds: float
    pii_redaction: bool
    opa_url: str
    opa_timeout_seconds: float
    env: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        e = dict(os.environ if env is None else env)
        return cls(
            home=Path(_get(e, "SUBSTRATE_HOME")).resolve(),
            tenant=_get(e, "SUBSTRATE_TENANT"),
            neo4j_uri=_get(e, "NEO4J_URI"),
            neo4j_http_port=int(_get(e, "NEO4J_HTTP_PORT")),
            neo4j_user=_get(e, "NEO4J_USER"),
            neo4j_password_env=e.get("NEO4J_PASSWORD", ""),
            neo4j_heap=_get(e, "NEO4J_HEAP"),
            neo4j_pagecache=_get(e, "NEO4J_PAGECACHE"),
            postgres_dsn_env=e.get("POSTGRES_DSN", ""),
            postgres_port=int(_get(e, "POSTGRES_PORT")),
            redis_url_env=_get(e, "REDIS_URL"),
            redis_cluster=_get(e, "REDIS_CLUSTER").lower() in ("1", "on", "true", "yes"),
            nats_url_env=_get(e, "NATS_URL"),
            gateway_host=_get(e, "GATEWAY_HOST"),
            gateway_port=int(_get(e, "GATEWAY_PORT")),
            allowed_hosts=_csv(e.get("ALLOWED_HOSTS", "")),
            allowed_origins=_csv(e.get("ALLOWED_ORIGINS", "")),
            oidc_jwks_url=e.get("OIDC_JWKS_URL", ""),
            oidc_jwks_file=e.get("OIDC_JWKS_FILE", ""),
            oidc_issuer=e.get("OIDC_ISSUER", ""),
            oidc_audience=_get(e, "OIDC_AUDIENCE"),
            oidc_claims=dict(pair.split("=", 1) for pair in _csv(_get(e, "OIDC_CLAIMS"))),
            upstream_identity_secret=e.get("UPSTREAM_IDENTITY_SECRET", ""),
            embedding_url=e.get("EMBEDDING_URL", ""),
            embedding_model=_get(e, "EMBEDDING_MODEL"),
            embedding_dim=int(_get(e, "EMBEDDING_DIM")),
            chat_url=e.get("CHAT_URL", ""),
            chat_model=e.get("CHAT_MODEL", ""),
            rerank_url=e.get("RERANK_URL", ""),
            verify_threshold=float(_get(e, "VERIFY_THRESHOLD")),
            intent_threshold=float(_get(e, "INTENT_THRESHOLD")),
            cache_ttl_seconds=int(_get(e, "CACHE_TTL_SECONDS")),
            plan_keep_seconds=max(0.0, float(_get(e, "PLAN_KEEP_SECONDS"))),
            cypher_row_limit=int(_get(e, "CYPHER_ROW_LIMIT")),
            cypher_timeout_seconds=float(_get(e, "CYPHER_TIMEOUT_SECONDS")),
            cypher_max_bytes=int(_get(e, "CYPHER_MAX_BYTES")),
            neo4j_tx_memory=_get(e, "NEO4J_TX_MEMORY"),
            max_body_bytes=int(_get(e, "MAX_BODY_BYTES")),
            rate_limit_per_minute=int(_get(e, "RATE_LIMIT_PER_MINUTE")),
            rate_limit_burst=int(_get(e, "RATE_LIMIT_BURST")),
            max_concurrent_per_principal=int(_get(e, "MAX_CONCURRENT_PER_PRINCIPAL")),
            request_deadline_seconds=float(_get(e, "REQUEST_DEADLINE_SECONDS")),
            max_inflight_requests=int(_get(e, "MAX_INFLIGHT_REQUESTS")),
            max_queued_requests=int(_get(e, "MAX_QUEUED_REQUESTS")),
            queue_wait_seconds=float(_get(e, "QUEUE_WAIT_SECONDS")),
            pii_redaction=_get(e, "PII_REDACTION").lower() not in ("off", "0", "false", "no"),
            opa_url=e.get("OPA_URL", "").rstrip("/"),
            opa_timeout_seconds=float(_get(e, "OPA_TIMEOUT_SECONDS")),
            env=e,
        )

    # --- state directory layout -------------------------------------------------------
    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def run_dir(self) -> Path:
        return self.home / "run"

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    @property
    def secrets_dir(self) -> Path:
        return self.home / "secrets"

    def data_dir(self, part: str) -> Path:
        return self.home / "data" / part

    # --- access ------------------------------------------------------------------------
    @property
    def host_allow_list(self) -> tuple[str, ...]:
        """Host names the gateway answers to (DNS rebinding defence)."""
        return self.allowed_hosts or ("127.0.0.1", "localhost", "::1", self.gateway_host)

    @property
    def origin_allow_list(self) -> tuple[str, ...]:
        """Browser origins a WebSocket may come from."""
        return self.allowed_origins or tuple(
            f"http://{h}:{self.gateway_port}" for h in ("127.0.0.1", "localhost", "[::1]"))

    # --- derived connection facts -------------------------------------------------------
    @property
    def neo4j_bolt_port(self) -> int:
        return int(self.neo4j_uri.rsplit(":", 1)[1].split("/")[0])

    @property
    def neo4j_password(self) -> str:
        if self.neo4j_password_env:
            return self.neo4j_password_env
        return read_secret(self.secrets_dir, NEO4J_PASSWORD)

    @property
    def postgres_embedded(self) -> bool:
        return not self.postgres_dsn_env

    @property
    def postgres_dsn(self) -> str:
        if self.postgres_dsn_env:
            return self.postgres_dsn_env
        return with_credentials(
            f"postgresql://{POSTGRES_USER}@127.0.0.1:{self.postgres_port}/postgres",
            POSTGRES_USER, read_secret(self.secrets_dir, POSTGRES_PASSWORD))

    @property
    def redis_url(self) -> str:
        return with_credentials(self.redis_url_env, REDIS_USER,
                                read_secret(self.secrets_dir, REDIS_PASSWORD))

    @property
    def nats_servers(self) -> list[str]:
        """Every URL of NATS_URL (comma-separated: the servers of a cluster), each with the
        credentials :func:`with_credentials` gives a single one."""
        password = read_secret(self.secrets_dir, NATS_PASSWORD)
        return [with_credentials(url, NATS_USER, password) for url in _csv(self.nats_url_env)]

    @property
    def nats_url(self) -> str:
        """The first NATS server (the local part's); clients connect to :attr:`nats_servers`."""
        return self.nats_servers[0]

    @property
    def redis_port(self) -> int:
        return urlsplit(self.redis_url_env).port or 6379

    @property
    def nats_port(self) -> int:
        return urlsplit(_csv(self.nats_url_env)[0]).port or 4222
