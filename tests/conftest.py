"""Shared fixtures. Integration tests get the real local stack, started once per session with
the same code as ``substrate up`` (an already-running stack is reused and left running)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from substrate.settings import Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Hypothesis' example database (schemathesis' API tests) with the rest of the runtime state,
# not in a .hypothesis/ of the checkout
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY",
                      str(Settings.from_env().home / "hypothesis"))


@pytest.fixture(scope="session")
def settings() -> Settings:
    return Settings.from_env()


@pytest.fixture(scope="session")
def stack(settings: Settings) -> Iterator[Settings]:
    """The real stack, started with the same code as ``substrate up``. Parts that were
    already healthy are reused and left running; parts this session started are stopped at
    the end (set SUBSTRATE_KEEP_STACK=1 to keep them)."""
    from substrate.stack.supervisor import all_parts, status
    from substrate.stack.up import up

    healthy_before = {p.name for p in status(settings) if p.healthy}
    demo = os.environ.get("SUBSTRATE_NO_DEMO") != "1"
    def stop_what_we_started() -> None:
        for part in reversed(all_parts(settings)):
            if part.name not in healthy_before:
                part.stop()

    try:
        up(settings, demo=demo, gateway=True)
    except BaseException:
        stop_what_we_started()  # a failed start leaves nothing running behind
        raise
    yield settings
    if os.environ.get("SUBSTRATE_KEEP_STACK") != "1":
        stop_what_we_started()
