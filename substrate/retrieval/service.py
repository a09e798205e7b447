"""The read side as one object the gateway (and the CLI's ``ask``) call into."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from psycopg import AsyncConnection
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool
from redis.exceptions import RedisError

from substrate.cache import ASKED_TTL_S, QueryCache, asked_key, cached_read, plain
from substrate.db import PG_ACQUIRE_S, PG_READ_DEADLINE_S, PG_READ_OPTIONS
from substrate.errors import NotFound, Unavailable
from substrate.graph import embedding_registry
from substrate.jsonwire import exact_loads
from substrate.retrieval import (  # noqa: F401 - strategies_* register search presets
    direct,
    overview,
    strategies_facts,
    strategies_global,
    strategies_hyde,
    strategies_time,
)
from substrate.retrieval.context import SearchContext, SearchOptions
from substrate.retrieval.embed_cache import EmbeddingMemo, Matrix
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.rerank import make_reranker
from substrate.retrieval.scope import (
    ReadScope,
    latest_scope,
    latest_versions,
    resolve_scope,
    share_pool,
    unshare_pool,
)
from substrate.retrieval.search import Emit, _no_emit, search
from substrate.retrieval.snapshot_clock import SnapshotClock
from substrate.retrieval.temporal import GraphFilter, Page, graph_state
from substrate.retrieval.tenants import KnownTenants
from substrate.services import Services


async def _configure(conn: AsyncConnection[Any]) -> None:
    """A pooled connection reads ``json``/``jsonb`` through orjson where that gives
    :func:`json.loads`'s value (``/temporal`` reads kilobytes of change-log properties)."""
    set_json_loads(exact_loads, conn)


class ReadService:
    def __init__(self, services: Services, cache: QueryCache | None = None) -> None:
        self.services = services
        self.cache = cache  # RSN-13: the public reads below go through it (@cached_read)
        self.settings = services.settings
        self.reader = GraphReader(services.async_driver, services.cypher,
                                  self.settings.plan_keep_seconds)
        self._memo = EmbeddingMemo(lambda texts: self.services.embedder.embed_documents(texts))
        self.reranker = make_reranker(self.settings, self._embed_many, self._memo.has)
        self.embedding_error: Unavailable | None = None
        self.pool: AsyncConnectionPool[Any] | None = None
        self.tenants = KnownTenants(self.settings.tenant)
        self.clock: SnapshotClock | None = None

    async def open(self, snapshot_clock: bool = False) -> None:
        """Open the PostgreSQL pool scope resolution falls back to; ``snapshot_clock``: keep
        the snapshot versions in memory (a long-lived gateway), so that an unpinned read
        needs no PostgreSQL round trip (:mod:`substrate.retrieval.snapshot_clock`)."""
        self.pool = AsyncConnectionPool(self.settings.postgres_dsn, min_size=1, max_size=8,
                                        open=False, timeout=PG_ACQUIRE_S, kwargs=PG_READ_OPTIONS,
                                        configure=_configure)
        await self.pool.open()
        share_pool(self.settings.postgres_dsn, self.pool)  # the strategies' reads use it too
        if snapshot_clock:
            self.clock = SnapshotClock(self.settings, self._latest_versions,
                                       reads=self.reader.bookmarks.stats)
            self.clock.start()
            self.reader.plans.start()  # a long-lived process: keep its reads' plans ready

    async def _latest_versions(self, tenants: list[str]) -> tuple[int, dict[str, int]]:
        assert self.pool is not None
        async with asyncio.timeout(PG_READ_DEADLINE_S):
            return await latest_versions(self.pool, tenants)

    async def aclose(self) -> None:
        await self.reader.aclose()
        if self.clock is not None:
            await self.clock.stop()
        if self.pool is not None:
            unshare_pool(self.pool)
            await self.pool.close()

    def warm_up(self) -> None:
        """Load the embedding model now, and check it built the vector indexes."""
        embedder = self.services.embedder
        embedder.embed_query("warm up")
        try:
            embedding_registry.check(self.settings.postgres_dsn, embedder.model_id,
                                     embedder.dimensions)
        except Unavailable as exc:
            self.embedding_error = exc

    def _embed_many(self, texts: Sequence[str]) -> Matrix:
        return self._memo(texts)

    async def embed_texts(self, texts: Sequence[str]) -> Matrix:
        """Document embeddings through the in-process memo: in place when every text is
        remembered, else off the event loop (the model is CPU work)."""
        if self._memo.has(texts):
            return self._memo(texts)
        return await asyncio.to_thread(self._memo, texts)

    async def embed_query(self, text: str) -> list[float]:
        if self.embedding_error is not None:
            raise self.embedding_error  # vector strategies degrade, never mix models
        vector: list[float] = await asyncio.to_thread(self.services.embedder.embed_query, text)
        return vector

    async def scope(self, tenant: str | None, snapshot_version: Any = None, at: Any = None,
                    clearance: str | None = None,
                    jurisdictions: Iterable[str] | None = None) -> ReadScope:
        """``jurisdictions``: the principal's (``Principal.jurisdictions``); empty: all.
        An unknown tenant is a 404 naming it (see :mod:`substrate.retrieval.tenants`)."""
        name = tenant or self.settings.tenant
        unpinned = snapshot_version is None and at is None
        if self.clock is not None and at is None and self.tenants.known(name):
            versions = self.clock.read(name)
            if versions is not None:  # the hot path: no PostgreSQL round trip
                if unpinned:
                    return self._after_write(latest_scope(name, *versions, clearance,
                                                          jurisdictions))
                if type(snapshot_version) is int and 1 <= snapshot_version <= versions[0]:
                    return replace(latest_scope(name, snapshot_version, 0, clearance,
                                                jurisdictions), pinned=True, tenant_version=None)
        async with asyncio.timeout(PG_READ_DEADLINE_S):  # a frozen PostgreSQL: 503, not a hang
            await self.tenants.check(self.pool, name)
            scope = await resolve_scope(self.settings, name, snapshot_version, at, clearance,
                                        self.pool, jurisdictions)
        if unpinned and self.clock is not None and scope.tenant_version is not None:
            self.clock.learn(name, scope.version, scope.tenant_version)
            return self._after_write(scope)
        return scope

    def _after_write(self, scope: ReadScope) -> ReadScope:
        """An unpinned scope with the bookmarks of its tenant's newest snapshot (when the
        clock has them): cross-process read-your-writes on a Neo4j cluster."""
        assert self.clock is not None and scope.tenant_version is not None
        found = self.clock.bookmarks_for(scope.tenant, scope.tenant_version)
        return replace(scope, bookmarks=found) if found else scope

    async def search(self, query: str, scope: ReadScope, options: SearchOptions,
                     emit: Emit = _no_emit) -> dict[str, Any]:
        """/search, and a note of what was asked under its bundle hash (for POST
        /counterfactual: the same question, pinned, re-run with a counterfactual analysis)."""
        result = await self._search(query, scope, options, emit)
        await self._remember(query, scope, result, options)
        return result

    async def _remember(self, query: str, scope: ReadScope, result: dict[str, Any],
                        options: SearchOptions) -> None:
        if self.cache is None or not self.cache.available:
            return
        bundle_hash = result.get("evidence_bundle", {}).get("bundle_hash")
        if not bundle_hash:
            return
        note = {"query": query, "snapshot_version": result["snapshot_version"],
                "options": plain(replace(options, counterfactual=None))}
        with contextlib.suppress(RedisError):  # a lost note: POST /counterfactual says 404
            await self.cache.redis.set(asked_key(scope.tenant, bundle_hash),
                                       json.dumps(note), ex=ASKED_TTL_S)

    async def counterfactual(self, bundle_hash: str, scope: ReadScope,
                             analysis: Any) -> dict[str, Any]:
        """A past /search response (by bundle hash, same tenant) re-run at its snapshot with a
        counterfactual analysis (``analysis``: true or the options object)."""
        raw = None
        if self.cache is not None:
            try:
                raw = await self.cache.redis.get(asked_key(scope.tenant, bundle_hash))
            except RedisError as exc:
                raise Unavailable("the query cache (Redis) is unavailable") from exc
        if raw is None:
            raise NotFound("no recent response with this bundle hash in this tenant",
                           {"bundle_hash": bundle_hash})
        note = json.loads(raw)
        options = SearchOptions.from_dict({**note["options"], "counterfactual": analysis})
        pinned = replace(scope, version=int(note["snapshot_version"]), pinned=True, at=None,
                         tenant_version=None)
        result = await self._search(note["query"], pinned, options)
        return {"bundle_hash": bundle_hash, "query": note["query"],
                "snapshot_version": pinned.version, "answer": result["answer"],
                "same_bundle": result["evidence_bundle"]["bundle_hash"] == bundle_hash,
                "counterfactual": result["counterfactual"],
                "confidence": result["confidence"]}

    @cached_read("search")
    async def _search(self, query: str, scope: ReadScope, options: SearchOptions,
                      emit: Emit = _no_emit) -> dict[str, Any]:
        factory = partial(SearchContext, self.settings, query, scope=scope, reader=self.reader,
                          embed_query=self.embed_query, options=options,
                          services=self.services, pool=self.pool)
        chat = (self.settings.chat_url, self.settings.chat_model) if self.settings.chat_url \
            else None
        return await search(factory, query, options, self.reranker, emit, chat)

    @cached_read("dependencies")
    async def dependencies(self, scope: ReadScope, service_id: str,
                           q: direct.DependencyQuery) -> dict[str, Any]:
        service, rows, truncated = await direct.dependencies_of(self.reader, scope, service_id,
                                                                q.validate())
        return {"service": service, "query": q.__dict__, "dependencies": rows,
                "truncated": truncated}

    @cached_read("temporal_state")
    async def temporal_state(self, scope: ReadScope, flt: GraphFilter, page: Page
                             ) -> dict[str, Any]:
        """GET /temporal?at= (RSN-07): the graph state at the scope's snapshot. The scope is
        pinned, so an entry is never stale (kept for the TTL, indexed under no id)."""
        return await graph_state(self.settings, self.reader, scope, flt, page, self.pool)

    @cached_read("ownership")
    async def ownership(self, scope: ReadScope, service_id: str) -> dict[str, Any]:
        service, rows = await direct.resolved_with(self.reader, scope,
                                                   "retrieval/direct_ownership", service_id)
        return {"service": service, **direct.merge_owners(rows)}

    @cached_read("memory")
    async def memory(self, scope: ReadScope, service_id: str, limit: int = 20,
                     question: str | None = None) -> dict[str, Any]:
        """RSN-08: decisions, failures, exceptions, memories; recency + relevance ranked."""
        service, rows = await direct.resolved_with(self.reader, scope,
                                                   "retrieval/direct_memory", service_id,
                                                   limit=limit + 1)
        truncated = len(rows) > limit
        rows = rows[:limit]
        query = question or f"why was {service['name']} designed this way; decisions, incidents"
        docs = [f"{r['item']['name']}. {r['props'].get('summary') or r['props'].get('text') or ''}"
                for r in rows]
        relevance = {}
        if docs:
            outcome = await self.reranker.rerank(query, docs)
            relevance = {x.index: x.score for x in outcome.results}
        items = [memory_item(r, i, len(rows), relevance.get(i, 0.0)) for i, r in enumerate(rows)]
        items.sort(key=lambda x: (-x["rank_score"], x["ceid"]))
        return {"service": service, "items": items, "truncated": truncated}


def memory_item(row: dict[str, Any], recency_rank: int, n: int,
                relevance: float) -> dict[str, Any]:
    props = row["props"]
    recency = 1.0 - recency_rank / max(n, 1)  # rows arrive newest first
    return {
        "ceid": row["item"]["ceid"], "kind": row["kind"], "title": row["item"]["name"],
        "status": props.get("status"), "superseded_by": row["superseded_by"],
        "summary": props.get("summary") or props.get("text"),
        "provenance": {
            "source_document": props.get("path") or row["hop"]["evidence_ref"],
            "author": props.get("author"),
            "date": props.get("date") or props.get("occurred_at"),
            "evidence_ref": row["hop"]["evidence_ref"], "connector": row["hop"]["source"],
        },
        "relation": row["hop"]["type"], "hop": row["hop"],
        "rank_score": round(0.5 * recency + 0.5 * float(relevance), 4),
    }
