"""Progress bars (tqdm) for long operator commands: ingest, history replay, re-embedding.

A :class:`Bar` is what the connectors take as their ``progress`` hook: ``bar(message)`` shows
the message beside the bar (the line-per-commit output it replaces), :func:`advance` moves it
and :func:`set_total` gives it a length, so tqdm shows the rate and the ETA. On anything but a
terminal the bar is off and so are the messages (logged at DEBUG): cron and CI logs stay quiet.
A plain callable (``print``, a test's list.append) keeps working as before.
"""

from __future__ import annotations

import logging
import shutil
import sys
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

from tqdm import tqdm

log = logging.getLogger("substrate.progress")


class Bar:
    def __init__(self, description: str, unit: str, total: int | None = None,
                 out: TextIO | None = None, enabled: bool | None = None) -> None:
        stream = out or sys.stderr
        on = stream.isatty() if enabled is None else enabled
        size = shutil.get_terminal_size((100, 24))  # a pty of 0 x 0 (script, CI): the fallback
        self.bar: tqdm[Any] = tqdm(total=total, desc=description, unit=unit, file=stream,
                                   disable=not on, ncols=size.columns, nrows=size.lines,
                                   leave=True)

    @property
    def enabled(self) -> bool:
        return not self.bar.disable

    def __call__(self, message: str) -> None:
        if self.enabled:
            self.bar.set_postfix_str(message[-60:], refresh=False)
        else:
            log.debug(message)

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.bar.close()


def advance(progress: Callable[[str], None], n: int = 1) -> None:
    """Move ``progress`` by ``n`` when it is a :class:`Bar` (other hooks have no bar)."""
    if isinstance(progress, Bar):
        progress.bar.update(n)


def set_total(progress: Callable[[str], None], total: int) -> None:
    if isinstance(progress, Bar):
        progress.bar.reset(total=total)
