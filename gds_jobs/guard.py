"""What every GDS job run does around its work: one run at a time, memory checked first,
progress reported.

* :func:`exclusive` — a PostgreSQL session advisory lock per (job, tenant): a second run that
  overlaps (two cron entries, cron and the incremental consumer) does not start
  (:class:`JobBusy`); the lock goes with the connection, so a killed run never leaves it held.
* :func:`check_memory` — the estimate of an algorithm on a projection (``*.estimate``) against
  the heap Neo4j has free; a run that would not fit is refused (:class:`NotEnoughMemory`)
  before it starts.
* :class:`Progress` — one line per step on stderr (``[job] step: detail (1.2 s)``): stdout
  stays one JSON line of results.
"""

from __future__ import annotations

import sys
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

import psycopg

from substrate.errors import SubstrateError
from substrate.settings import Settings

HEAP_SHARE = 0.8  # what a run may take of the heap Neo4j has free


class JobBusy(SubstrateError):
    status = 409
    code = "job_running"


class NotEnoughMemory(SubstrateError):
    status = 507
    code = "gds_memory"


def lock_key(job: str, tenant: str) -> tuple[int, int]:
    """Two signed 32-bit keys for ``pg_try_advisory_lock(int, int)``."""
    def signed(text: str) -> int:
        n = zlib.crc32(text.encode())
        return n - 2**32 if n >= 2**31 else n

    return signed(f"substrate-gds:{job}"), signed(tenant)


@contextmanager
def exclusive(settings: Settings, job: str, tenant: str) -> Iterator[None]:
    """Hold the (job, tenant) lock for the block, or raise :class:`JobBusy` at once."""
    keys = lock_key(job, tenant)
    with psycopg.connect(settings.postgres_dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", keys).fetchone()
        if not row or not row[0]:
            raise JobBusy(f"another {job} run for tenant {tenant!r} is in progress",
                          {"job": job, "tenant": tenant})
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s, %s)", keys)


class Progress:
    """Step lines on stderr with the seconds since the run began."""

    def __init__(self, job: str, out: TextIO | None = None, quiet: bool = False) -> None:
        self.job, self.out, self.quiet = job, out, quiet
        self.started = time.monotonic()
        self.steps: list[dict[str, Any]] = []

    def __call__(self, step: str, **detail: Any) -> None:
        seconds = round(time.monotonic() - self.started, 3)
        self.steps.append({"step": step, "seconds": seconds, **detail})
        if self.quiet:
            return
        text = ", ".join(f"{k}={v}" for k, v in detail.items())
        print(f"[{self.job}] {step}" + (f": {text}" if text else "") + f" ({seconds} s)",
              file=self.out or sys.stderr, flush=True)


ProgressFn = Callable[..., None]


def no_progress(step: str, **detail: Any) -> None:
    return None


def heap_free(run_cypher: Callable[[str], Any], query: str) -> int:
    frame = run_cypher(query)
    return int(frame["free"][0])


def check_memory(needed: int, free: int, what: str, progress: ProgressFn) -> int:
    """``needed``: the upper bound (``bytes_max``) of an ``*.estimate`` call. Refuse when it
    exceeds HEAP_SHARE of ``free``; returns it."""
    progress("memory estimate", algorithm=what, bytes_max=needed, heap_free=free)
    if needed > HEAP_SHARE * free:
        raise NotEnoughMemory(f"{what} needs up to {needed} bytes; Neo4j has {free} free",
                              {"algorithm": what, "bytes_max": needed, "heap_free": free})
    return needed
