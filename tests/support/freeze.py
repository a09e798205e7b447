"""Freeze a part of THIS stack (SIGSTOP, its children too: PostgreSQL backends) and thaw it
(SIGCONT): the fault of the fault tests and the load benchmark. Only processes named by the
stack's own pid files under SUBSTRATE_HOME/run are touched."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from substrate.settings import Settings


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


@contextmanager
def frozen(settings: Settings, part: str) -> Iterator[None]:
    """SIGSTOP the part's process (and its children: PostgreSQL backends), SIGCONT after."""
    pid = int((settings.run_dir / f"{part}.pid").read_text())
    os.kill(pid, signal.SIGSTOP)
    stopped = [pid, *_children(pid)]
    for child in stopped[1:]:
        os.kill(child, signal.SIGSTOP)
    try:
        yield
    finally:
        for p in reversed(stopped):
            with suppress(ProcessLookupError):
                os.kill(p, signal.SIGCONT)
