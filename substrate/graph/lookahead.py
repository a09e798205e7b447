"""Prepare a write session's next batch while this batch's Neo4j transaction commits.

Neo4j's COMMIT of a snapshot of 20,000 relationships takes 0.2-0.5 s here, and the writer
only waits for it; preparing the next batch (reads, checks, diff, budget, embeddings:
everything before its own write) takes 0.1-0.25 s of the writer's CPU. A pipelined session
told which batch follows (:meth:`~substrate.graph.writer.WriteSession.ahead`) starts that
preparation in a thread once this batch's transaction has run its statements and written its
mark, with the session's memory already holding what the transaction wrote. The next
``commit`` of that very batch object, with the same options, takes the prepared result.

What keeps it sound:

* the preparation reads Neo4j only once the commit is through, whatever its outcome (the
  writer's read gate): no read sees the graph without this snapshot while it commits;
* it runs on the session's PostgreSQL connection, which the commit no longer uses once its
  intent is written; when the commit fails, the preparation is waited for and dropped before
  the session reconciles (on that connection) and forgets the tenant;
* a transaction the driver runs again (a transient error) has the tenant's memory
  forgotten and the preparation dropped: it saw element ids that were rolled back;
* any other batch, other options, or a part of a split batch is prepared as before, once the
  dropped preparation has finished (never two users of the connection).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from typing import Any

from substrate.graph.records import GraphBatch


@dataclass
class Ahead:
    """The batch to prepare once ``after`` is written (see the module's doc)."""

    after: GraphBatch
    following: GraphBatch
    options: Mapping[str, Any]
    gate: threading.Event = field(default_factory=threading.Event)  # set: reads may go on
    future: Future[Any] | None = None  # the preparation, once started
    stale: bool = False  # started from a transaction that was run again: never used
    starts: int = 0  # runs of ``after``'s transaction function

    def matches(self, batch: GraphBatch, options: Mapping[str, Any]) -> bool:
        return (self.following is batch and dict(self.options) == dict(options)
                and self.future is not None and not self.stale)

    def release(self) -> None:
        """The commit is through (or failed): the preparation's reads may run."""
        self.gate.set()

    def drop(self) -> None:
        """Let the preparation finish and forget its outcome (its error too)."""
        self.release()
        if self.future is not None:
            wait([self.future])
