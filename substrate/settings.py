"""One frozen settings object, read from the environment once and passed explicitly.

Every variable name here is also used by ``compose.yaml`` (a test checks that they agree).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

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
    "POSTGRES_DSN": "",  # empty: embedded PostgreSQL 16 + pgvector from the pgserver wheel
    "POSTGRES_PORT": "5432",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
    "NATS_URL": "nats://127.0.0.1:4222",
    "GATEWAY_HOST": "127.0.0.1",
    "GATEWAY_PORT": "8080",
    "EMBEDDING_URL": "",  # OpenAI-compatible /v1/embeddings base URL; empty: local MiniLM
    "EMBEDDING_MODEL": "all-MiniLM-L6-v2",
    "EMBEDDING_DIM": "384",
    "CHAT_URL": "",  # OpenAI-compatible chat endpoint base URL; empty: deterministic fallbacks
    "CHAT_MODEL": "",
    "RERANK_URL": "",  # bge-reranker style /rerank endpoint; empty: local reranker
    "VERIFY_THRESHOLD": "0.92",
    "INTENT_THRESHOLD": "0.6",
    "CACHE_TTL_SECONDS": "900",
    "CYPHER_ROW_LIMIT": "1000",
    "CYPHER_TIMEOUT_SECONDS": "10",
}


def _get(env: Mapping[str, str], name: str) -> str:
    return env.get(name, ENV_DEFAULTS[name]) or ENV_DEFAULTS[name]


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
    redis_url: str
    nats_url: str
    gateway_host: str
    gateway_port: int
    embedding_url: str
    embedding_model: str
    embedding_dim: int
    chat_url: str
    chat_model: str
    rerank_url: str
    verify_threshold: float
    intent_threshold: float
    cache_ttl_seconds: int
    cypher_row_limit: int
    cypher_timeout_seconds: float
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
            redis_url=_get(e, "REDIS_URL"),
            nats_url=_get(e, "NATS_URL"),
            gateway_host=_get(e, "GATEWAY_HOST"),
            gateway_port=int(_get(e, "GATEWAY_PORT")),
            embedding_url=e.get("EMBEDDING_URL", ""),
            embedding_model=_get(e, "EMBEDDING_MODEL"),
            embedding_dim=int(_get(e, "EMBEDDING_DIM")),
            chat_url=e.get("CHAT_URL", ""),
            chat_model=e.get("CHAT_MODEL", ""),
            rerank_url=e.get("RERANK_URL", ""),
            verify_threshold=float(_get(e, "VERIFY_THRESHOLD")),
            intent_threshold=float(_get(e, "INTENT_THRESHOLD")),
            cache_ttl_seconds=int(_get(e, "CACHE_TTL_SECONDS")),
            cypher_row_limit=int(_get(e, "CYPHER_ROW_LIMIT")),
            cypher_timeout_seconds=float(_get(e, "CYPHER_TIMEOUT_SECONDS")),
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

    # --- derived connection facts -------------------------------------------------------
    @property
    def neo4j_bolt_port(self) -> int:
        return int(self.neo4j_uri.rsplit(":", 1)[1].split("/")[0])

    @property
    def neo4j_password(self) -> str:
        if self.neo4j_password_env:
            return self.neo4j_password_env
        secret = self.secrets_dir / "neo4j_password"
        return secret.read_text().strip() if secret.exists() else ""

    @property
    def postgres_embedded(self) -> bool:
        return not self.postgres_dsn_env

    @property
    def postgres_dsn(self) -> str:
        if self.postgres_dsn_env:
            return self.postgres_dsn_env
        return f"postgresql://postgres@127.0.0.1:{self.postgres_port}/postgres"

    @property
    def redis_port(self) -> int:
        return int(self.redis_url.rsplit(":", 1)[1].split("/")[0])

    @property
    def nats_port(self) -> int:
        return int(self.nats_url.rsplit(":", 1)[1].split("/")[0])
