"""Shared fixtures. Integration tests get the real local stack, started once per session with
the same code as ``substrate up`` (an already-running stack is reused and left running)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from substrate.settings import Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def settings() -> Settings:
    return Settings.from_env()


@pytest.fixture(scope="session")
def stack(settings: Settings) -> Iterator[Settings]:
    from substrate.stack.supervisor import down, status
    from substrate.stack.up import up

    was_up = all(p.healthy for p in status(settings))
    demo = os.environ.get("SUBSTRATE_NO_DEMO") != "1"
    up(settings, demo=demo, gateway=True)
    yield settings
    if not was_up and os.environ.get("SUBSTRATE_KEEP_STACK") != "1":
        down(settings)
