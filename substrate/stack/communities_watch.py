"""The incremental community consumer (RSN-15, ``python -m gds_jobs watch``) as a part of the
local stack: started by ``substrate up`` after the gateway, stopped first by ``substrate down``.

It listens on no port: it is healthy when its process is alive and its durable JetStream
consumer exists on the ``GRAPH`` stream (read from the NATS monitor endpoint, no credentials).
"""

from __future__ import annotations

import sys
from typing import Any

import httpx

from substrate.errors import StackError
from substrate.graph.events import STREAM
from substrate.settings import redact_url
from substrate.stack.nats_server import NatsPart
from substrate.stack.part import Part

DURABLE = "substrate-communities"  # gds_jobs.consumer.DURABLE (not imported: no model load here)


class CommunitiesWatchPart(Part):
    name = "communities"
    start_timeout = 120.0  # loads the embedder before it subscribes

    def ports(self) -> list[int]:
        return []

    def address(self) -> str:
        return f"{redact_url(self.settings.nats_url)} {STREAM}/{DURABLE}"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "gds_jobs", "watch"]

    def check(self) -> str:
        if self.pid() is None:
            raise StackError("the community consumer is not running")
        monitor = NatsPart(self.settings).monitor_port
        jsz = httpx.get(f"http://127.0.0.1:{monitor}/jsz", params={"consumers": "true"},
                        timeout=2).json()
        consumer = _durable(jsz)
        if consumer is None:
            raise StackError(f"the durable {DURABLE} is not on the {STREAM} stream yet")
        return f"durable {DURABLE} ({consumer.get('num_pending', 0)} event(s) pending)"


def _durable(jsz: dict[str, Any]) -> dict[str, Any] | None:
    for account in jsz.get("account_details") or []:
        for stream in account.get("stream_detail") or []:
            if stream.get("name") != STREAM:
                continue
            for consumer in stream.get("consumer_detail") or []:
                if consumer.get("name") == DURABLE:
                    return dict(consumer)
    return None
