"""RSN-13 query cache on Redis, indexed by the node ids each answer touched.

Layout (every key of a tenant shares the hash tag ``{tenant}``, so one slot holds them):

- ``sr:{t}:e:<sha256>`` — an entry: ``{"tv", "v", "result"}``; the key hashes the kind, the
  normalised parameters, tenant, clearance, jurisdictions and the snapshot pin ("latest"
  when unpinned).
- ``sr:{t}:i:<ceid>`` — a SET of the entry keys whose result touched ``ceid``.
- ``sr:{t}:wm`` — the invalidation watermark of the tenant: ``started`` / ``applied`` are the
  newest snapshot versions whose ``graph.updated`` event began / finished evicting.

Every multi-key operation (the eviction and store scripts, the lookup pipeline) names keys of
one tenant only, so on a Redis Cluster (``REDIS_CLUSTER=1``) it runs in that tenant's slot.

Pinned entries (``snapshot_version`` or ``at``) are immutable: their key holds the resolved
version and they are never indexed. Unpinned entries are evicted by the invalidator
(:mod:`substrate.cache_invalidator`); two guards keep them fresh in between:

- store: an entry computed at tenant version ``tv`` is not stored when an event newer than
  ``tv`` already started evicting (one script checks the watermark and stores, so it is
  atomic with eviction);
- read: an entry from ``tv`` is served at tenant version ``T > tv`` only once the events up
  to ``T`` were applied (it survived them); until then it is a miss, so a caller reads its
  own writes even before the event arrives (and while NATS is down).

Redis down never fails a request: the answer is computed uncached, and a small circuit
breaker skips Redis for a few seconds after a failure.

Round trips: a lookup is one (the entry and the watermark, pipelined). With ``defer_stores``
(the gateway) a miss is answered before its store reaches Redis: the entry is serialised at
once (orjson), its index (the ids in that text) is computed and the store script run after the
answer (status ``storing``), and
a lookup of a key whose store is still queued in this process waits for that store first, so
a caller asking twice in a row gets the hit. At most ``MAX_PENDING_STORES`` are queued; past
that a store is awaited as without deferral. ``early_start`` names the kinds (the gateway:
the direct endpoints') that start their computation with the lookup while their lookups
mostly miss (:mod:`substrate.cache_early`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import inspect
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, cast

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from substrate import __version__, jsonwire
from substrate.cache_early import EarlyStart
from substrate.cypher import CYPHER_DIR
from substrate.graph.ontology import ONTOLOGY_FILE, Ontology, load_ontology
from substrate.retrieval.scope import ReadScope
from substrate.settings import Settings

REDIS_TIMEOUT_S = 0.5  # per call; 0.2 s timed out single reads under CPU load
BREAKER_COOLDOWN_S = 3.0
BREAKER_THRESHOLD = 3  # consecutive failures open the breaker (one slow read does not)
INVALIDATE_CHUNK = 500  # changed ids per eviction script call
MAX_PENDING_STORES = 256  # deferred stores queued at once (then a store is awaited)
QUERY_FIELDS = ("query", "question")
_CEID = re.compile(r"^([a-z][a-z0-9_]*):\S+$")

Compute = Callable[[], Awaitable[dict[str, Any]]]
T = TypeVar("T")
log = logging.getLogger(__name__)

# KEYS[1] = watermark; ARGV = version, final ("1"|"0"), index key prefix, watermark TTL,
# then the changed ids. Atomic, so a store's WATCH on the watermark orders it against this.
_EVICT_LUA = """
local v = tonumber(ARGV[1])
local function bump(field)
  local cur = tonumber(redis.call('HGET', KEYS[1], field) or '0')
  if v > cur then redis.call('HSET', KEYS[1], field, v) end
end
bump('started')
local evicted = 0
for i = 5, #ARGV do
  local idx = ARGV[3] .. ARGV[i]
  for _, key in ipairs(redis.call('SMEMBERS', idx)) do
    evicted = evicted + redis.call('DEL', key)
  end
  redis.call('DEL', idx)
end
if ARGV[2] == '1' then bump('applied') end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
return evicted
"""


# KEYS[1] = watermark, KEYS[2] = the entry, KEYS[3..] = index keys of the touched ids;
# ARGV = tenant version of the read, payload, TTL. Nothing is stored when an event newer than
# the read already started evicting (or was applied).
_STORE_LUA = """
local tv = tonumber(ARGV[1])
for _, mark in ipairs(redis.call('HMGET', KEYS[1], 'started', 'applied')) do
  if mark and tonumber(mark) > tv then return 0 end
end
redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[3])
for i = 3, #KEYS do
  redis.call('SADD', KEYS[i], KEYS[2])
  redis.call('EXPIRE', KEYS[i], ARGV[3])
end
return 1
"""

RedisClient = aioredis.Redis | aioredis.RedisCluster


class CacheUnavailable(Exception):
    """Redis is down (or its circuit breaker is open); the caller decides what that means."""


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    stored: int = 0
    not_stored: int = 0  # an event newer than the read already started evicting
    stale: int = 0  # found, but the tenant changed and its event is not applied yet
    unavailable: int = 0  # Redis down or breaker open: computed uncached
    errors: int = 0
    last_error: str | None = None


# --- keys ------------------------------------------------------------------------------
def normalise_query(text: str) -> str:
    return " ".join(text.split()).lower()


def plain(value: Any) -> Any:
    """Parameters as plain JSON data: dataclasses as dicts, sequences as lists, query text
    whitespace-collapsed and lower-cased."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): normalise_query(v) if k in QUERY_FIELDS and isinstance(v, str)
                else plain(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        return sorted(plain(v) for v in value)
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def snapshot_pin(scope: ReadScope) -> str:
    if not scope.pinned:
        return "latest"
    return f"v{scope.version}" + (f"@{scope.at}" if scope.at else "")


def tenant_prefix(tenant: str) -> str:
    return f"sr:{{{tenant}}}:"


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Version, ontology, Cypher templates and retrieval code (its subpackages, the
    translator's grammar and the ontology's words included): new code never reads old
    answers."""
    digest = hashlib.sha256(f"{__version__}:{load_ontology().version}".encode())
    for path in fingerprinted_files():
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def fingerprinted_files() -> list[Path]:
    """The files ``code_fingerprint`` reads, in a stable order."""
    retrieval = Path(__file__).resolve().parent / "retrieval"
    code = [p for p in retrieval.rglob("*") if p.suffix in (".py", ".lark", ".yaml")]
    return sorted(p for p in [*CYPHER_DIR.rglob("*"), *code, ONTOLOGY_FILE] if p.is_file())


def cache_key(kind: str, params: dict[str, Any], scope: ReadScope) -> str:
    material = {"kind": kind, "params": plain(params), "tenant": scope.tenant,
                "clearance": sorted(scope.clearance), "jurisdictions": scope.jurisdictions,
                "pin": snapshot_pin(scope), "code": code_fingerprint()}
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), default=str)
    return f"{tenant_prefix(scope.tenant)}e:{hashlib.sha256(text.encode()).hexdigest()}"


ASKED_TTL_S = 86_400  # how long POST /counterfactual can find a past /search by bundle hash


def asked_key(tenant: str, bundle_hash: str) -> str:
    """What a /search with this bundle hash asked (query, pin, options)."""
    return f"{tenant_prefix(tenant)}asked:{bundle_hash}"


def index_key(tenant: str, ceid: str) -> str:
    return f"{tenant_prefix(tenant)}i:{ceid}"


def watermark_key(tenant: str) -> str:
    return f"{tenant_prefix(tenant)}wm"


@functools.lru_cache(maxsize=1)
def _default_prefixes() -> frozenset[str]:
    return ceid_prefixes(load_ontology())


def ceid_prefixes(ontology: Ontology) -> frozenset[str]:
    return frozenset(spec.ceid_prefix for spec in ontology.labels.values())


def touched_ids(result: Any, prefixes: Iterable[str] | None = None) -> set[str]:
    """Every ceid-looking string anywhere in ``result``: entities, hop endpoints
    (``from``/``to``), targets, seeds, hits, evidence-bundle nodes and citations."""
    known = frozenset(prefixes) if prefixes is not None else _default_prefixes()
    found: set[str] = set()
    stack: list[Any] = [result]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, str) and len(item) <= 300:
            match = _CEID.match(item)
            if match and match.group(1) in known:
                found.add(item)
    return found


# a JSON string value (never a key: a key's closing quote is followed by ":") that opens
# like a ceid; escapes are kept whole, so the token ends at the string's real closing quote
_CEID_TOKEN = re.compile(rb'"([a-z][a-z0-9_]*:[^"\\]*(?:\\.[^"\\]*)*)"(?!:)')


def touched_ids_in(text: bytes, prefixes: Iterable[str] | None = None) -> set[str]:
    """``touched_ids`` of a value from its compact JSON text (``jsonwire.dumps``): the same
    set, read with one scan of the text instead of a walk of the value."""
    known = frozenset(prefixes) if prefixes is not None else _default_prefixes()
    found: set[str] = set()
    for token in _CEID_TOKEN.findall(text):
        item = json.loads(b'"' + token + b'"') if b"\\" in token else token.decode()
        if len(item) <= 300 and (match := _CEID.match(item)) and match.group(1) in known:
            found.add(item)
    return found


# --- the cache -------------------------------------------------------------------------
def redis_client(settings: Settings, timeout: float = REDIS_TIMEOUT_S) -> RedisClient:
    """Short timeouts and no retries: a dead Redis costs a request at most ~``timeout``.
    ``REDIS_CLUSTER=1``: a cluster client, REDIS_URL is its startup node."""
    client_class = aioredis.RedisCluster if settings.redis_cluster else aioredis.Redis
    return client_class.from_url(
        settings.redis_url, socket_timeout=timeout, socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )


def register_script(client: RedisClient, text: str) -> AsyncScript:
    """redis-py types ``register_script`` for ``Redis`` only; a cluster client runs a script
    the same way (EVALSHA, sent to the node that holds the slot of its keys)."""
    return client.register_script(text)  # type: ignore[misc]


class QueryCache:
    def __init__(self, settings: Settings, redis_client: RedisClient,
                 ontology: Ontology | None = None,
                 cooldown_s: float = BREAKER_COOLDOWN_S, defer_stores: bool = False,
                 early_start: Iterable[str] = ()) -> None:
        self.ttl = settings.cache_ttl_seconds
        self.defer_stores = defer_stores
        self.early = EarlyStart(early_start)  # compute with the lookup when it mostly misses
        self._pending: dict[str, asyncio.Task[str]] = {}  # deferred stores by entry key
        self.redis = redis_client
        self.prefixes = ceid_prefixes(ontology) if ontology else _default_prefixes()
        self.cooldown_s = cooldown_s
        self.stats = CacheStats()
        self._down_until = 0.0
        self._failures = 0  # consecutive
        self._evict = register_script(redis_client, _EVICT_LUA)
        self._store_script = register_script(redis_client, _STORE_LUA)

    @classmethod
    def from_settings(cls, settings: Settings, ontology: Ontology | None = None,
                      defer_stores: bool = False, early_start: Iterable[str] = ()
                      ) -> QueryCache:
        return cls(settings, redis_client(settings), ontology, defer_stores=defer_stores,
                   early_start=early_start)

    async def aclose(self) -> None:
        await self.drain()
        await self.redis.aclose()

    async def drain(self) -> None:
        """Wait for the deferred stores queued so far."""
        if self._pending:
            await asyncio.gather(*self._pending.values(), return_exceptions=True)

    @property
    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    async def get_or_compute(self, kind: str, params: dict[str, Any], scope: ReadScope,
                             compute: Compute) -> tuple[dict[str, Any], bool]:
        """The cached answer (``cached`` True) or ``compute()``'s, stored for next time.
        Either way the answer carries ``"cache": {"hit", "key", "status"}``."""
        key = cache_key(kind, params, scope)
        if not scope.pinned and scope.tenant_version is None:
            return {**await compute(), "cache": _block(False, key, "bypass")}, False
        queued = self._pending.get(key)
        if queued is not None:  # this process is still storing that entry: read after it
            await asyncio.wait([queued])
        early = self.early.start(kind, compute)
        try:
            if early is not None:  # let it send its query first: the lookup's own work
                await asyncio.sleep(0)  # then overlaps the database's
            found = await self._lookup(key, scope)
        except CacheUnavailable:
            result = await (compute() if early is None else early)
            return {**result, "cache": _block(False, key, "unavailable")}, False
        except BaseException:
            self.early.cancel(early)
            raise
        self.early.learn(kind, found is None)
        if found is not None:
            self.stats.hits += 1
            self.early.drop(early)
            return {**found, "cache": _block(True, key, "hit")}, True
        self.stats.misses += 1
        result = await (compute() if early is None else early)
        return {**result, "cache": _block(False, key, await self._store(key, scope, result))}, \
            False

    async def invalidate(self, tenant: str, version: int, changed_ids: Iterable[str]) -> int:
        """Evict every entry of ``tenant`` indexed under a changed id; returns how many.
        Raises :class:`CacheUnavailable` when Redis is down (the event must be retried)."""
        ids = sorted(set(changed_ids))
        chunks = [ids[i : i + INVALIDATE_CHUNK]
                  for i in range(0, len(ids), INVALIDATE_CHUNK)] or [[]]
        evicted = 0
        for n, chunk in enumerate(chunks):
            final = "1" if n == len(chunks) - 1 else "0"
            args: list[str | int] = [version, final, index_key(tenant, ""), self.ttl * 4,
                                     *chunk]
            evicted += int(await self._guarded(partial(
                self._evict, keys=[watermark_key(tenant)], args=args)))
        return evicted

    # --- internals -----------------------------------------------------------------
    async def _guarded(self, call: Callable[[], Awaitable[T]]) -> T:
        if not self.available:
            self.stats.unavailable += 1
            raise CacheUnavailable("redis circuit breaker open")
        try:
            result = await call()
        except (RedisError, OSError, TimeoutError) as exc:
            self._failures += 1
            if self._failures >= BREAKER_THRESHOLD:
                self._down_until = time.monotonic() + self.cooldown_s
            self.stats.errors += 1
            self.stats.unavailable += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            raise CacheUnavailable(str(exc)) from exc
        self._failures = 0
        return result

    async def _lookup(self, key: str, scope: ReadScope) -> dict[str, Any] | None:
        async def fetch() -> list[Any]:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.get(key)
                pipe.hget(watermark_key(scope.tenant), "applied")
                replies: list[Any] = await pipe.execute()
                return replies

        raw, applied = await self._guarded(fetch)
        if raw is None:
            return None
        try:
            entry = jsonwire.loads(raw)
            tv, result = entry["tv"], entry["result"]
        except (ValueError, KeyError, TypeError):
            return None  # not an entry this code wrote: recompute and overwrite it
        current = scope.tenant_version or 0
        if scope.pinned or tv == current or int(applied or 0) >= current:
            return cast(dict[str, Any], result)
        self.stats.stale += 1
        return None

    async def _store(self, key: str, scope: ReadScope, result: dict[str, Any]) -> str:
        """The store's status; ``storing`` when it was queued to run after the answer."""
        if result.get("degraded") or result.get("pending"):  # a strategy failed, or a part
            # of the answer is not computed yet (a risk ranking): do not pin it for the TTL
            self.stats.not_stored += 1
            return "not_stored"
        # serialised now (the caller may go on to change what it was given); indexed from
        # that text when written, after the answer when the store is deferred
        payload = jsonwire.dumps({"tv": scope.tenant_version, "v": scope.version,
                                  "result": result})
        if (self.defer_stores and len(self._pending) < MAX_PENDING_STORES
                and key not in self._pending):
            task = asyncio.get_running_loop().create_task(self._write(key, scope, payload))
            self._pending[key] = task
            task.add_done_callback(partial(self._stored, key))
            return "storing"
        return await self._write(key, scope, payload)

    def _stored(self, key: str, task: asyncio.Task[str]) -> None:
        if self._pending.get(key) is task:
            del self._pending[key]
        if not task.cancelled() and task.exception() is not None:
            log.error("deferred cache store failed: %r", task.exception())

    async def _write(self, key: str, scope: ReadScope, payload: bytes) -> str:
        try:
            if scope.pinned:  # immutable, never indexed
                stored = await self._guarded(partial(self._set, key, payload))
            else:
                touched = touched_ids_in(payload, self.prefixes)
                stored = await self._guarded(lambda: self._store_indexed(
                    key, scope, payload, touched))
        except CacheUnavailable:
            return "unavailable"
        if stored:
            self.stats.stored += 1
            return "stored"
        self.stats.not_stored += 1
        return "not_stored"

    async def _set(self, key: str, payload: bytes) -> bool:
        await cast(Awaitable[Any], self.redis.set(key, payload, ex=self.ttl))
        return True

    async def _store_indexed(self, key: str, scope: ReadScope, payload: bytes,
                             touched: set[str]) -> bool:
        """False when an event newer than this read already started evicting."""
        keys = [watermark_key(scope.tenant), key,
                *(index_key(scope.tenant, ceid) for ceid in sorted(touched))]
        stored = await self._store_script(keys=keys, args=[scope.tenant_version or 0,
                                                            payload, self.ttl])
        return int(stored) == 1


def _block(hit: bool, key: str, status: str) -> dict[str, Any]:
    return {"hit": hit, "key": key, "status": status}


# --- the read-side decorator -----------------------------------------------------------
R = TypeVar("R", bound=Callable[..., Awaitable[dict[str, Any]]])
_NOT_KEYED = ("self", "scope", "emit")


def cached_read(kind: str) -> Callable[[R], R]:
    """Serve a read method through ``self.cache`` (a :class:`QueryCache` or None).

    The key covers every argument of the call except ``self``, ``scope`` (its tenant,
    clearance and pin go in separately) and ``emit``; a call with a non-default ``emit``
    (the WebSocket stream wants every stage) bypasses the cache.
    """

    def decorate(method: R) -> R:
        signature = inspect.signature(method)
        emit_default = signature.parameters["emit"].default \
            if "emit" in signature.parameters else None
        names = tuple(signature.parameters)[1:]  # after self
        defaults = {n: p.default for n, p in signature.parameters.items()
                    if p.default is not inspect.Parameter.empty}
        simple = all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
                     for p in signature.parameters.values())

        def arguments(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
                      ) -> dict[str, Any]:
            """The call's arguments by name, defaults filled in (``Signature.bind`` without
            its cost when the call is plain; it still reports a wrong call)."""
            if simple and len(args) <= len(names) and kwargs.keys() <= set(names[len(args):]):
                given = {**defaults, **dict(zip(names, args, strict=False)), **kwargs}
                if len(given) == len(names):  # else a required one is missing: bind says so
                    return given
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            return dict(bound.arguments)

        @functools.wraps(method)
        async def wrapper(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
            cache: QueryCache | None = getattr(self, "cache", None)
            given = arguments(self, args, kwargs)
            if cache is None or given.get("emit", emit_default) is not emit_default:
                return await method(self, *args, **kwargs)
            params = {k: v for k, v in given.items() if k not in _NOT_KEYED}
            result, _ = await cache.get_or_compute(
                kind, params, given["scope"], lambda: method(self, *args, **kwargs))
            return result

        return cast(R, wrapper)

    return decorate
