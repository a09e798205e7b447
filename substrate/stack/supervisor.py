"""Bring the whole local stack up or down, report its status."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from substrate.settings import Settings
from substrate.stack.communities_watch import CommunitiesWatchPart
from substrate.stack.gateway_server import GatewayPart
from substrate.stack.nats_server import NatsPart
from substrate.stack.part import Part, PartStatus, Progress, _print
from substrate.stack.postgres import PostgresPart
from substrate.stack.redis_server import RedisPart

PART_NAMES = ("neo4j", "postgres", "redis", "nats", "gateway", "communities")


def data_parts(settings: Settings, progress: Progress = _print) -> list[Part]:
    from substrate.stack.neo4j_server import Neo4jPart

    return [
        Neo4jPart(settings, progress),
        PostgresPart(settings, progress),
        RedisPart(settings, progress),
        NatsPart(settings, progress),
    ]


def all_parts(settings: Settings, progress: Progress = _print) -> list[Part]:
    return [*data_parts(settings, progress), GatewayPart(settings, progress),
            CommunitiesWatchPart(settings, progress)]


def part_by_name(settings: Settings, name: str) -> Part:
    for part in all_parts(settings):
        if part.name == name:
            return part
    raise KeyError(name)


def start_data_parts(settings: Settings, progress: Progress = _print) -> list[str]:
    """Start every data part that is not healthy, in parallel. Returns the names started."""
    parts = data_parts(settings, progress)
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        started = list(pool.map(lambda p: (p.name, p.start()), parts))
    return [name for name, was_started in started if was_started]


def status(settings: Settings) -> list[PartStatus]:
    parts = all_parts(settings, progress=lambda _m: None)
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        return list(pool.map(lambda p: p.status(), parts))


def down(settings: Settings, progress: Progress = _print) -> list[str]:
    stopped = []
    for part in reversed(all_parts(settings, progress)):
        if part.stop():
            stopped.append(part.name)
    return stopped
