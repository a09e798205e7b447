"""What a write session knows of a tenant's graph from its own commits, so that it does not
read it back from Neo4j.

A :class:`~substrate.graph.writer.WriteSession` holds the writers' lock: while it lasts no
other writer changes the graph, so what its own committed snapshots read, created and closed
stays true. The session remembers, per tenant:

* ``live``: nodes known live, with their element ids (``graph/create_edges`` finds an edge's
  ends by element id) — those its commits found live, wrote or created, less those they
  closed. An edge end found here is not read again (``graph/live_ceids``).
* ``born``: nodes its commits created. Such a node did not exist before (neither live nor
  closed: ``graph/create_nodes`` only creates those), so every relationship at it was
  created by this session.
* ``made``: the hashes of the keys of the edges its commits created. An edge with an end in
  ``born`` whose key's hash is not here was never created, so it is not live and needs no
  read (``graph/live_edges``); when the hash is here (or collides) it is read as before.

When the tenant had no node at all when the memory of it began (``complete``), the memory
knows it whole: a node it did not create does not exist (``known_absent_node``), and an edge
it did not make is not live whatever its ends.

The session forgets a tenant on any failed commit (see ``WriteSession.commit``). A
:class:`SessionMemory` can be handed from one session to the next (a long import hands the
writers' lock back between sessions): the next keeps it only when no other snapshot was
committed in between — versions are dense, so its first version must follow the last one
the memory saw (a memory that saw none of its own is not handed on). Each
collection is bounded: when one is full it is emptied — ``born`` and ``made`` together,
since ``born`` is only sound with every edge made since those nodes were created.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain

from substrate.graph import diff as d

MAX_LIVE = 1_000_000  # nodes with their element ids (~250 bytes each)
MAX_MADE = 4_000_000  # edge key hashes (~60 bytes each), and as many born nodes


@dataclass
class TenantMemory:
    live: dict[str, str] = field(default_factory=dict)
    born: set[str] = field(default_factory=set)
    made: set[int] = field(default_factory=set)
    complete: bool = False  # the tenant had no node when this memory began

    def known_absent(self, key: str, src: str, dst: str) -> bool:
        """Whether the edge ``key`` (from ``src`` to ``dst``) is surely not live."""
        return (self.complete or src in self.born or dst in self.born) \
            and hash(key) not in self.made

    def known_absent_node(self, ceid: str) -> bool:
        """Whether no node ``ceid`` exists, live or closed."""
        return self.complete and ceid not in self.born

    def remember(self, existing: Mapping[str, str], live_ids: Iterable[str],
                 created: Mapping[str, str], changes: d.ChangeSet) -> None:
        """After a committed snapshot: ``existing`` (element ids of the nodes it named that
        existed), ``live_ids`` (those of them that were live), ``created`` (the nodes it
        created) and its ``changes``."""
        if len(self.live) + len(created) > MAX_LIVE:
            self.live.clear()
        if len(self.made) + len(changes.edge_adds) > MAX_MADE \
                or len(self.born) + len(created) > MAX_MADE:
            self.born.clear()
            self.made.clear()
            self.complete = False  # the nodes created before are no longer all known
        written = chain((n.ceid for n in changes.node_adds),
                        (n.ceid for n, _ in changes.node_updates))
        self.live.update((c, existing[c]) for c in chain(live_ids, written) if c in existing)
        self.live.update(created)
        for ceid, _ in changes.node_closes:
            self.live.pop(ceid, None)
        self.born.update(created)
        self.made.update(hash(key) for key, _ in changes.edge_adds)


@dataclass
class SessionMemory:
    """The memories of one or more consecutive write sessions, by tenant."""

    tenants: dict[str, TenantMemory] = field(default_factory=dict)
    last_version: int | None = None  # the newest snapshot they include

    def resume(self, next_version: int) -> None:
        """At a session's start (under the lock, after reconciling): forget everything when
        another writer's snapshot (or a crashed writer's intent) came after ours, or when
        no snapshot of ours says where the memory stands (its commits changed nothing)."""
        if self.last_version is None or next_version != self.last_version + 1:
            self.tenants.clear()
            self.last_version = None

    def tenant(self, name: str) -> TenantMemory:
        return self.tenants.setdefault(name, TenantMemory())

    def begin(self, name: str, is_empty: Callable[[], bool]) -> TenantMemory:
        """The memory of tenant ``name``; a new one asks ``is_empty`` (does the tenant have
        no node at all?) once: then it knows the tenant whole (``complete``)."""
        memory = self.tenants.get(name)
        if memory is None:
            memory = self.tenants[name] = TenantMemory(complete=is_empty())
        return memory

    def forget(self, name: str) -> None:
        self.tenants.pop(name, None)
