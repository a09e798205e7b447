"""Latency of the gateway on the demo graph (tenant ``acme``), with the query cache kept out.

* p50/p95 of each direct endpoint (``/dependencies/checkout``, ``/ownership/checkout``,
  ``/memory/payment``) and of ``/search`` for one question of each use case RSN-UC-01..08,
  ``REPEATS`` timed requests each (after ``WARMUP`` untimed ones), over HTTP keep-alive;
* ``POST /cypher`` (direct read-only Cypher) for one query, beside the driver running the
  query as the gateway rewrote it (scoped to tenant, clearance and snapshot);
* the same Cypher run directly through the driver — the template the endpoint runs, rendered
  by ``CypherLibrary`` with the endpoint's parameters, each run right after one gateway
  request (side by side, so load swings hit both alike) — and the gateway's overhead as the
  ratio of the two p50s (the gateway also authenticates, rate-limits, scopes the read from
  its in-process snapshot clock, looks the answer up in the cache and stores it, and builds
  the evidence bundle and confidence block; /memory also ranks the items), over
  ``SIDE_REPEATS`` pairs (``BENCH_ENDPOINTS_SIDE_REPEATS``, 100); ``/temporal``
  also reads PostgreSQL (the snapshot row, the page's properties as of then), so its driver
  side also runs those queries through psycopg and ``gateway_overhead_ratio_p50_same_work``
  compares the gateway with both;
* with ``BENCH_ENDPOINTS_GAP_S=S``, a pause of S seconds before each of those timed calls,
  so that each starts from an idle machine (sporadic traffic), instead of back to back;
* each figure next to the spec's latency target (reasoning-search-service.txt);
* the latency authentication adds per request (``auth``): ``Authenticator.authenticate`` on
  an API key remembered in-process (the hot path), on a key verified against PostgreSQL (a
  cold key: one indexed lookup + HMAC), and on an RS256 JWT checked against a JWKS file.

Requests carry the local admin key that ``substrate up`` writes (``SUBSTRATE_API_KEY``
overrides it). The direct endpoints are requested over one keep-alive ``http.client``
connection (``tests/bench/lean_http.py``): httpx's own work per request (~0.35 ms here) would
count against the gateway, while the driver figure holds only the driver's own work.

The cache (``substrate/cache.py``, RSN-13) is kept out by deleting, after every request, the
one entry the response names in ``cache.key`` (the module's own ``sr:{tenant}:e:`` key, never
anything else; a store the gateway runs after answering, status ``storing``, is waited for);
a timed request that was a cache hit is counted and reported. A miss still pays the cache's
lookup (one Redis round trip) and its store's serialisation and indexing, which are included.

Run: ``.substrate/venv/bin/python -m tests.bench.bench_endpoints``; needs ``substrate up``.
``BENCH_ENDPOINTS_ONLY=direct``: the direct endpoints beside the driver only.
Writes ``$SUBSTRATE_HOME/bench/endpoints.json`` and prints the figures.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx
import jwt
import psycopg
import redis
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from psycopg_pool import AsyncConnectionPool

from substrate.cache import tenant_prefix
from substrate.cypher import CypherLibrary
from substrate.db import neo4j_driver
from substrate.retrieval.ask import api_key
from substrate.retrieval.cypher_scope import scope_parameters
from substrate.retrieval.scope import resolve_scope
from substrate.retrieval.temporal import PROPS_AT_SQL, SNAPSHOT_AT_SQL
from substrate.security import apikeys
from substrate.security.authenticate import Authenticator, Credentials
from substrate.settings import Settings
from tests.bench.lean_http import KeepAlive, Reply
from tests.bench.stats import latency

TENANT = "acme"
REPEATS = int(os.environ.get("BENCH_ENDPOINTS_REPEATS", "30"))
# the side-by-side samples of the direct endpoints: a p50 of 30 moved a ratio by ~0.1 between
# runs of the same code, one of 100 by ~0.05 (2026-11-24); each costs a few milliseconds
SIDE_REPEATS = int(os.environ.get("BENCH_ENDPOINTS_SIDE_REPEATS", "100"))
# BENCH_ENDPOINTS_ONLY=direct: the direct endpoints beside the driver only (no /search, no auth)
ONLY = os.environ.get("BENCH_ENDPOINTS_ONLY", "")
WARMUP = 3
# BENCH_ENDPOINTS_GAP_S=0.5: a pause before each timed call of the side-by-side samples, so
# that each starts from an idle machine (sporadic traffic; 0: back to back)
GAP_S = float(os.environ.get("BENCH_ENDPOINTS_GAP_S", "0"))
AUTH_REPEATS = 300
ENTRY_PREFIX = tenant_prefix(TENANT) + "e:"  # substrate.cache.cache_key's entries, nothing else
STORE_WAIT_S = 0.5  # how long a deferred store may take to land (then it was not stored)

# (use case, spec question shape, our question on the demo data, spec target in ms)
SEARCHES: tuple[tuple[str, str, float], ...] = (
    ("RSN-UC-01", "What does PaymentService depend on?", 1000),
    ("RSN-UC-02", "Who owns the checkout service?", 500),
    ("RSN-UC-03", "Does PR #447 match its linked ticket?", 1000),
    ("RSN-UC-04", "What are our top 3 architectural risks?", 8000),
    ("RSN-UC-05", "Why was the decision made to authorise payments asynchronously?", 5000),
    ("RSN-UC-06", "What changed before the checkout incident on 2026-09-17?", 5000),
    ("RSN-UC-07", "Find all services calling auth directly", 1000),
    ("RSN-UC-08", "Which services does epic SHOP-10 affect?", 5000),
)

# POST /cypher (direct read-only Cypher, RSN-02): the driver runs the query as the gateway
# rewrote it (tenant, clearance and snapshot scoping, in the response) with the scope's values
CYPHER_QUERY = ("MATCH (s:Service {name: $name})-[r:CALLS|DEPENDS_ON]->(t) "
                "RETURN t.name AS name, type(r) AS rel, r.evidence_ref AS ref ORDER BY name")
CYPHER_PARAMS = {"name": "checkout"}

# (path, template, Jinja context, template parameters besides the scope, target use case, ms)
# Each direct endpoint is one round trip (service resolution included): the driver runs that
# same template with the same parameters.
DEPENDENCY_CTX = {"label": "Service", "types": ["CALLS", "DEPENDS_ON"], "depth": 1,
                  "direction": "out"}
DIRECT: tuple[tuple[str, str, dict[str, Any], dict[str, Any], str, float], ...] = (
    ("/dependencies/checkout", "retrieval/direct_dependencies", DEPENDENCY_CTX,
     {"ceid": "service:checkout", "name": "checkout", "min_weight": 0.0,
      "include_inferred": False, "limit": 101},
     "RSN-UC-01", 1000),
    ("/ownership/checkout", "retrieval/direct_ownership", {"label": "Service"},
     {"ceid": "service:checkout", "name": "checkout"}, "RSN-UC-02", 500),
    ("/memory/payment", "retrieval/direct_memory", {"label": "Service"},
     {"ceid": "service:payment", "name": "payment", "limit": 21}, "RSN-UC-05", 5000),
    ("/impact/SHOP-10", "retrieval/direct_impact", {"label": "ProjectItem", "depth": 1},
     {"ceid": "item:shop-10", "name": "SHOP-10", "limit": 101}, "RSN-UC-08", 300),
    # {version}: the snapshot the driver's scope reads (the newest)
    ("/temporal?snapshot_version={version}&service=checkout&depth=1", "temporal/direct_state",
     {"label": "Entity", "service": True, "depth": 1, "types": []},
     {"ceid": "service:checkout", "name": "checkout", "nodes_after": "", "rels_after": "",
      "offset": 0, "limit": 100, "page_cap": 101, "rels_cap": 101}, "RSN-07", 300),
)


def percentiles(samples_ms: list[float]) -> dict[str, float | int | None]:
    return latency(samples_ms)


class CacheGuard:
    """Deletes the cache entry a response names, so the next request computes again."""

    def __init__(self, settings: Settings, prefix: str = ENTRY_PREFIX) -> None:
        self.prefix = prefix  # one tenant's entries: tenant_prefix(tenant) + "e:"
        self.redis = redis.Redis.from_url(settings.redis_url)
        self.hits = 0
        self.statuses: dict[str, int] = {}

    def after(self, body: dict[str, Any], timed: bool) -> None:
        block = body.get("cache")
        if not isinstance(block, dict):
            return
        if timed:
            status = str(block.get("status"))
            self.statuses[status] = self.statuses.get(status, 0) + 1
            self.hits += bool(block.get("hit"))
        key = block.get("key")
        if isinstance(key, str) and key.startswith(self.prefix):
            deleted = self.redis.delete(key)
            # ``storing``: the gateway stores the entry after answering; delete it once there
            deadline = time.monotonic() + STORE_WAIT_S
            while block.get("status") == "storing" and not deleted \
                    and time.monotonic() < deadline:
                time.sleep(0.002)
                deleted = self.redis.delete(key)


def wait_ready(send: Callable[[], httpx.Response], timeout_s: float = 180.0) -> None:
    """The shared gateway may be restarted by someone else: wait until it answers again."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if send().status_code == 200:
                return
        except (httpx.TransportError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("the gateway did not come back")
        time.sleep(1.0)


def timed_requests(send: Callable[[], httpx.Response], guard: CacheGuard) -> list[float]:
    """REPEATS timed requests after WARMUP untimed ones (again after a gateway restart)."""
    samples: list[float] = []
    warm = 0
    while len(samples) < REPEATS:
        t = time.perf_counter()
        try:
            response = send()
        except (httpx.TransportError, OSError):
            wait_ready(send)
            warm = 0
            continue
        elapsed = (time.perf_counter() - t) * 1000
        if response.status_code != 200:
            raise RuntimeError(f"{response.request.url}: {response.status_code} {response.text}")
        guard.after(response.json(), timed=warm >= WARMUP)
        if warm >= WARMUP:
            samples.append(elapsed)
        warm += 1
    return samples


def driver_samples(settings: Settings, template: str, ctx: dict[str, Any],
                   params: dict[str, Any]) -> tuple[list[float], int]:
    scope = asyncio.run(resolve_scope(settings, TENANT))
    query = CypherLibrary.load().text(template, **ctx)
    driver = neo4j_driver(settings)
    samples, rows = [], 0
    try:
        for i in range(WARMUP + REPEATS):
            t = time.perf_counter()
            records, _, _ = driver.execute_query(query, {**scope.params(), **params},
                                                 routing_="r")
            elapsed = (time.perf_counter() - t) * 1000
            rows = len(records)
            if i >= WARMUP:
                samples.append(elapsed)
    finally:
        driver.close()
    return samples, rows


PgStep = Callable[[psycopg.Connection[Any], list[Any]], None]


def side_by_side(settings: Settings, send: Callable[[], Reply], guard: CacheGuard,
                 query: str, args: dict[str, Any], pg_step: PgStep | None = None,
                 ) -> tuple[dict[str, list[float]], int]:
    """Gateway and driver samples taken alternately (one request, then the same template
    through the driver), so that a change in the machine's load affects all alike. Two
    driver figures: ``driver`` runs the template as ``execute_query`` does (a managed read
    transaction: BEGIN+RUN+PULL, then COMMIT), ``driver_autocommit`` as one auto-commit
    query (RUN+PULL, one round trip), which is how the gateway's reads run it.

    ``pg_step``: what the endpoint also reads from PostgreSQL, given the query's records, run
    through psycopg on one kept connection right after the managed query; ``driver_pg``
    holds its time (the same work through the raw drivers = ``driver`` + ``driver_pg``)."""
    driver = neo4j_driver(settings)
    samples: dict[str, list[float]] = {"gateway": [], "driver": [], "driver_autocommit": [],
                                       "driver_pg": []}
    rows = 0
    conn = psycopg.connect(settings.postgres_dsn, autocommit=True) if pg_step else None
    try:
        for i in range(WARMUP + SIDE_REPEATS):
            time.sleep(GAP_S)
            t = time.perf_counter()
            response = send()
            elapsed = (time.perf_counter() - t) * 1000
            if response.status_code != 200:
                raise RuntimeError(f"{response.url}: {response.status_code}")
            guard.after(response.json(), timed=i >= WARMUP)
            time.sleep(GAP_S)
            t = time.perf_counter()
            records, _, _ = driver.execute_query(query, args, routing_="r")
            managed = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            if conn is not None and pg_step is not None:
                pg_step(conn, records)
            pg = (time.perf_counter() - t) * 1000
            time.sleep(GAP_S)
            t = time.perf_counter()
            with driver.session(default_access_mode="READ") as session:
                auto = list(session.run(query, args))
            autocommit = (time.perf_counter() - t) * 1000
            rows = len(records)
            assert len(auto) == rows
            if i >= WARMUP:
                samples["gateway"].append(elapsed)
                samples["driver"].append(managed)
                samples["driver_autocommit"].append(autocommit)
                if conn is not None:
                    samples["driver_pg"].append(pg)
    finally:
        driver.close()
        if conn is not None:
            conn.close()
    return samples, rows


def temporal_pg(tenant: str, version: int) -> PgStep:
    """``/temporal?snapshot_version=``'s PostgreSQL reads: the snapshot's row, and the page's
    nodes' properties as of then from the change log (the queries the endpoint runs)."""
    def step(conn: psycopg.Connection[Any], records: list[Any]) -> None:
        ceids = [n["ceid"] for n in records[0]["nodes"]][:100] if records else []
        conn.execute(SNAPSHOT_AT_SQL, (tenant, version)).fetchone()
        if ceids:
            conn.execute(PROPS_AT_SQL, (tenant, ceids, version)).fetchall()
    return step


def _jwt_settings(settings: Settings, folder: Path) -> tuple[Settings, str]:
    """Settings reading a JWKS file with a fresh RSA key, and a token it signed."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = {**json.loads(RSAAlgorithm.to_jwk(private.public_key())), "kid": "bench"}
    (folder / "jwks.json").write_text(json.dumps({"keys": [jwk]}))
    env = {**os.environ, "OIDC_JWKS_FILE": str(folder / "jwks.json"), "OIDC_ISSUER": "bench"}
    now = int(time.time())
    token = jwt.encode({"iss": "bench", "aud": settings.oidc_audience, "sub": "bench",
                        "iat": now, "exp": now + 3600, "tenants": [TENANT]}, private,
                       algorithm="RS256", headers={"kid": "bench"})
    return Settings.from_env(env), token


async def _auth_samples(settings: Settings, key: str, token: str) -> dict[str, Any]:
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(settings.postgres_dsn, min_size=1,
                                                         max_size=2, open=False)
    await pool.open()
    try:
        hot = Authenticator(settings, lambda: pool)
        cold = Authenticator(settings, lambda: pool, key_cache_s=0.0)  # a lookup every call
        out = {}
        for name, auth, creds in (("api_key_cached", hot, Credentials(bearer=key)),
                                  ("api_key_cold", cold, Credentials(bearer=key)),
                                  ("jwt_rs256_jwks_file", hot, Credentials(bearer=token))):
            samples = []
            for i in range(WARMUP + AUTH_REPEATS):
                t = time.perf_counter()
                await auth.authenticate(creds)
                if i >= WARMUP:
                    samples.append((time.perf_counter() - t) * 1_000_000)
            ms = percentiles(samples)  # of microseconds here
            out[name] = {"p50_us": ms["p50_ms"], "p95_us": ms["p95_ms"], "n": ms["n"]}
        return out
    finally:
        await pool.close()


def auth_latency(settings: Settings) -> dict[str, Any]:
    """What authentication adds to each request, on a throwaway reader key (revoked after)."""
    with psycopg.connect(settings.postgres_dsn, autocommit=True) as conn:
        key_id, key = apikeys.create(conn, "bench_endpoints (revoked after)",
                                     apikeys.Grant((TENANT,), "internal", ("reader",)))
    try:
        with tempfile.TemporaryDirectory() as folder:
            jwt_settings, token = _jwt_settings(settings, Path(folder))
            figures = asyncio.run(_auth_samples(jwt_settings, key, token))
    finally:
        with psycopg.connect(settings.postgres_dsn, autocommit=True) as conn:
            apikeys.revoke(conn, key_id)
    return {"repeats": AUTH_REPEATS, **figures}


def direct_figures(endpoint: str, uc: str, target: float, template: str,
                   samples: dict[str, list[float]], rows: int) -> dict[str, Any]:
    http, drv = percentiles(samples["gateway"]), percentiles(samples["driver"])
    auto = percentiles(samples["driver_autocommit"])
    out = {
        "endpoint": endpoint, "use_case": uc, "gateway": http,
        "driver_same_cypher": {**drv, "template": template, "rows": rows},
        "driver_same_cypher_autocommit": auto,
        "gateway_overhead_ratio_p50": round(http["p50_ms"] / drv["p50_ms"], 2),
        "gateway_overhead_ratio_p95": round(http["p95_ms"] / drv["p95_ms"], 2),
        "gateway_overhead_ratio_p50_vs_autocommit": round(http["p50_ms"] / auto["p50_ms"], 2),
        "target_ms": target, "target": verdict(http["p95_ms"], target),
    }
    if samples["driver_pg"]:  # the endpoint also reads PostgreSQL: the same work
        work = percentiles([a + b for a, b in zip(samples["driver"], samples["driver_pg"],
                                                  strict=True)])
        out["driver_same_work"] = {**work, "postgres": percentiles(samples["driver_pg"])}
        out["gateway_overhead_ratio_p50_same_work"] = round(http["p50_ms"] / work["p50_ms"], 2)
    return out


def verdict(p95_ms: float, target_ms: float) -> str:
    return "meets" if p95_ms < target_ms else "MISSES"


def run() -> dict[str, Any]:
    settings = Settings.from_env()
    load_before = os.getloadavg()[0]
    guard = CacheGuard(settings)
    base = f"http://{settings.gateway_host}:{settings.gateway_port}"
    key = api_key(settings)
    if key is None:
        raise SystemExit("no API key: run `substrate up` (it writes secrets/admin_api_key)")
    headers = {"x-tenant": TENANT, "authorization": f"Bearer {key}"}
    direct, search = [], []
    with httpx.Client(base_url=base, timeout=120, headers=headers) as client, \
            KeepAlive(base, headers) as lean:
        scope = asyncio.run(resolve_scope(settings, TENANT))
        for path, template, ctx, params, uc, target in DIRECT:
            query = CypherLibrary.load().text(template, **ctx)
            target_path = path.format(version=scope.version)
            pg_step = temporal_pg(TENANT, scope.version) if path.startswith("/temporal") \
                else None
            samples, rows = side_by_side(
                settings, lambda p=target_path: lean.get(p), guard, query,  # type: ignore[misc]
                {**scope.params(), **params}, pg_step)
            direct.append(direct_figures(target_path, uc, target, template, samples, rows))
        cypher_body = {"query": CYPHER_QUERY, "params": CYPHER_PARAMS}
        rewritten = lean.post("/cypher", cypher_body).json()["rewritten_query"]
        samples, rows = side_by_side(
            settings, lambda: lean.post("/cypher", cypher_body), guard, rewritten,
            {**CYPHER_PARAMS, **scope_parameters(scope)})
        direct.append(direct_figures("POST /cypher", "RSN-02", 1000, "(the rewritten query)",
                                     samples, rows))
        intent_body = {"pr": 447}  # its one read; the texts' vectors come from the memo
        samples, rows = side_by_side(
            settings, lambda: lean.post("/intent-check", intent_body), guard,
            CypherLibrary.load().text("retrieval/intent_pr"),
            {**scope.params(), "ceid": "pr:447"})
        direct.append(direct_figures("POST /intent-check", "RSN-UC-03", 300,
                                     "retrieval/intent_pr", samples, rows))
        for uc, question, target in SEARCHES if ONLY != "direct" else ():
            body = client.post("/search", json={"query": question}).json()
            guard.after(body, timed=False)
            lat = percentiles(timed_requests(
                lambda q=question: client.post("/search", json={"query": q}), guard))  # type: ignore[misc]
            search.append({"use_case": uc, "question": question,
                           "intent": body.get("route", {}).get("intent"),
                           "strategies": sorted(body.get("strategies", {})),
                           "latency": lat, "target_ms": target,
                           "target": verdict(lat["p95_ms"], target)})
    return {
        "benchmark": "gateway_latency", "tenant": TENANT, "repeats": REPEATS,
        "side_by_side_repeats": SIDE_REPEATS,
        "direct_client": "http.client, one keep-alive connection (tests/bench/lean_http.py)",
        "warmup": WARMUP, "gap_s": GAP_S, "direct": direct, "search": search,
        "auth": auth_latency(settings) if ONLY != "direct" else {},
        "cache": {"timed_hits": guard.hits, "timed_statuses": guard.statuses,
                  "bypass": "entry named in each response deleted after it"},
        "load_average_1m": {"before": round(load_before, 2),
                            "after": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()},
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def main(argv: list[str] | None = None) -> None:
    figures = run()
    out = Settings.from_env().home / "bench" / "endpoints.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    for d in figures["direct"]:
        drv, auto = d["driver_same_cypher"], d["driver_same_cypher_autocommit"]
        print(f"{d['endpoint']:<24} p50 {d['gateway']['p50_ms']:>7} ms  p95 "
              f"{d['gateway']['p95_ms']:>7} ms  driver p50 {drv['p50_ms']} p95 {drv['p95_ms']}"
              f" ms  overhead x{d['gateway_overhead_ratio_p50']} (p95 "
              f"x{d['gateway_overhead_ratio_p95']}); auto-commit driver p50 {auto['p50_ms']} ms"
              f" x{d['gateway_overhead_ratio_p50_vs_autocommit']}  ({d['use_case']} < "
              f"{d['target_ms']:.0f} ms: {d['target']})")
        if "driver_same_work" in d:
            work = d["driver_same_work"]
            print(f"{'':<24} with its PostgreSQL reads through psycopg: driver p50 "
                  f"{work['p50_ms']} ms (PostgreSQL {work['postgres']['p50_ms']} ms)  overhead "
                  f"x{d['gateway_overhead_ratio_p50_same_work']}")
    for s in figures["search"]:
        print(f"/search {s['use_case']} p50 {s['latency']['p50_ms']:>7} ms  p95 "
              f"{s['latency']['p95_ms']:>7} ms  (< {s['target_ms']:.0f} ms: {s['target']}) "
              f"[{s['intent']}] {s['question']}")
    for name, fig in figures["auth"].items():
        if isinstance(fig, dict):
            print(f"authentication {name:<22} p50 {fig['p50_us']:>8} us  p95 "
                  f"{fig['p95_us']:>8} us")
    print(f"cache hits among timed requests: {figures['cache']['timed_hits']} -> {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
