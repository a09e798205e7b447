"""Bounded work per caller: a rate limit shared by every replica (GCRA in Redis) and a cap on
the requests one caller has in flight (per replica).

Rate: the generic cell rate algorithm (the "leaky bucket as a meter"): one Redis key per
caller holds the theoretical arrival time (TAT); a request is let through when it would not
push the TAT more than ``burst`` emission intervals ahead of now. One Lua script does the read
and the write atomically, with Redis's own clock (``TIME``), so replicas never disagree; it
hands a replica a small lease of requests at once (:class:`RateLimiter`), so most requests
pay no Redis round trip.

Redis down or slow: the limiter fails *open* (the request passes and a warning is logged at
most once every ``WARN_EVERY_S``). Availability of reads is worth more here than the limit;
the concurrency cap, which needs no Redis, still bounds each caller on each replica.
"""

from __future__ import annotations

import logging
import math
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis, RedisCluster
from redis.exceptions import RedisError

from substrate.errors import SubstrateError

log = logging.getLogger(__name__)

KEY_PREFIX = "substrate:ratelimit:"
LEASE_FRACTION = 20  # a lease is this fraction of the burst
# an unspent lease is dropped after this long. Its requests were charged to the shared GCRA
# when it was granted, so holding it longer never lets a caller past the limit; a second
# made a caller who asks every half second pay a Redis round trip every other request
# (sporadic /ownership p50 7.1 -> 6.3 ms with 10 s here)
LEASE_S = 10.0
MAX_LEASES = 10_000  # callers holding a lease before the expired ones are forgotten
REDIS_TIMEOUT_S = 0.25
WARN_EVERY_S = 30.0

# KEYS[1] the caller's key; ARGV[1] emission interval (microseconds), ARGV[2] burst, ARGV[3]
# how many requests to take at once (a lease). Returns {granted (0 = refused), retry_after_us,
# remaining}: as many as fit of ARGV[3], at least one, or none.
GCRA_LUA = """
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local limit = interval * burst
local room = math.floor((limit - (tat - now)) / interval)
if room < 1 then
  return {0, tat + interval - now - limit, 0}
end
local granted = math.min(want, room)
local new_tat = tat + granted * interval
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX',
           math.ceil((new_tat - now) / 1000) + 1)
return {granted, 0, room - granted}
"""


class RateLimited(SubstrateError):
    status = 429
    code = "rate_limited"

    def __init__(self, message: str, retry_after: int, detail: Any = None) -> None:
        super().__init__(message, detail)
        self.retry_after = retry_after


class PayloadTooLarge(SubstrateError):
    status = 413
    code = "payload_too_large"


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after_s: float
    remaining: int

    @property
    def retry_after_header(self) -> int:
        """Whole seconds for ``Retry-After`` (never 0 for a refusal)."""
        return max(1, math.ceil(self.retry_after_s))


class RateLimiter:
    """GCRA over Redis: ``per_minute`` requests per minute on average, ``burst`` at once.

    A replica takes a caller's requests from Redis in leases of ``lease`` (``burst // 20``,
    at least 1; as many as fit, at least one) and spends them locally for at most
    ``LEASE_S``: most requests need no Redis round trip, and the shared limit holds
    within one lease per replica and caller (an unspent lease counts as spent)."""

    def __init__(self, redis: Redis | RedisCluster, per_minute: int, burst: int,
                 lease: int | None = None) -> None:
        if per_minute < 1 or burst < 1:
            raise ValueError("RATE_LIMIT_PER_MINUTE and RATE_LIMIT_BURST must be at least 1")
        self.redis = redis
        self.interval_us = 60_000_000 // per_minute
        self.burst = burst
        self.lease = lease if lease is not None else max(1, burst // LEASE_FRACTION)
        self.script = redis.register_script(GCRA_LUA)  # type: ignore[misc]  # cluster too
        self._last_warning = 0.0
        self._leases: dict[str, tuple[int, float]] = {}  # caller -> (left, expires at)

    async def check(self, caller: str) -> Decision:
        left, expires = self._leases.get(caller, (0, 0.0))
        if left > 0 and time.monotonic() < expires:
            self._leases[caller] = (left - 1, expires)
            return Decision(True, 0.0, -1)
        try:
            granted, retry_us, remaining = await self.script(
                keys=[KEY_PREFIX + caller], args=[self.interval_us, self.burst, self.lease])
        except (RedisError, OSError, TimeoutError) as exc:
            self._warn(exc)
            return Decision(True, 0.0, -1)  # fail open, see the module docstring
        if int(granted) > 1:
            if len(self._leases) >= MAX_LEASES:
                self._forget_expired()
            self._leases[caller] = (int(granted) - 1, time.monotonic() + LEASE_S)
        else:
            self._leases.pop(caller, None)
        return Decision(int(granted) > 0, int(retry_us) / 1e6, int(remaining))

    def _forget_expired(self) -> None:
        now = time.monotonic()
        self._leases = {c: v for c, v in self._leases.items() if v[1] > now}

    def _warn(self, exc: BaseException) -> None:
        now = time.monotonic()
        if now - self._last_warning >= WARN_EVERY_S:
            self._last_warning = now
            log.warning("rate limit not enforced (Redis unavailable: %s); failing open", exc)


class ConcurrencyCap:
    """At most ``limit`` requests in flight per caller in this process (one event loop, so a
    plain counter is enough). A request over the cap is refused at once, never queued."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("MAX_CONCURRENT_PER_PRINCIPAL must be at least 1")
        self.limit = limit
        self.inflight: defaultdict[str, int] = defaultdict(int)

    def acquire(self, caller: str) -> bool:
        if self.inflight[caller] >= self.limit:
            return False
        self.inflight[caller] += 1
        return True

    def release(self, caller: str) -> None:
        self.inflight[caller] -= 1
        if self.inflight[caller] <= 0:
            del self.inflight[caller]


def caller_key(state: dict[str, Any] | None, client: tuple[str, int] | None) -> str:
    """Who is limited: the authenticated principal, else the client address."""
    principal = (state or {}).get("principal")
    principal_id = getattr(principal, "id", None)
    if principal_id:
        return f"principal:{principal_id}"
    return f"addr:{client[0] if client else 'unknown'}"
