"""The write path: one validated batch -> one snapshot in Neo4j, PostgreSQL and on NATS.

Order of a commit (crash-safe, see :mod:`substrate.graph.reconcile`): take the writers'
session lock and reconcile what a crashed writer left; in one PostgreSQL transaction take the
next version, read the live graph and diff, reject the whole batch on any problem, and commit
the write intent (its change rows); run one Neo4j write transaction that also writes a
``WriteMark``; record the snapshot, change log and audit entry from the intent in one
PostgreSQL transaction; clear the mark; publish the outbox (the outbox loop retries).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol, Required, TypedDict, Unpack, cast

import psycopg
from neo4j import Driver, ManagedTransaction

from substrate.cypher import CypherLibrary
from substrate.errors import BatchTooLarge, Unavailable, ValidationFailed
from substrate.graph import diff as d
from substrate.graph import embedding_registry, events, faults, intents, snapshots, tx_budget
from substrate.graph.lookahead import Ahead
from substrate.graph.neo4j_write import Rows, edge_rows, rows_for
from substrate.graph.ontology import Ontology, load_ontology
from substrate.graph.reconcile import clear_marks, reconcile_locked
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.session_memory import SessionMemory, TenantMemory
from substrate.graph.validation import Problem, validate_batch, validate_queued
from substrate.graph.verification import QueueItem, enqueue
from substrate.settings import Settings

log = logging.getLogger(__name__)

MAXV = 2**53 - 1  # open end of a node validity interval
ROWS_PER_STATEMENT = 10_000
TEXT_PROPS = ("summary", "description", "text")


class CommitOptions(TypedDict, total=False):
    """A commit's options. ``mode="sync"``: what ``source`` asserted before and no longer
    asserts is closed. ``verified``: a human approved it (no threshold).
    ``keep_edge_sources``: edges keep their own ``source`` (an entity merge re-creates other
    sources' edges); otherwise every edge belongs to the committing source."""

    source: Required[str]
    tenant: str | None
    valid_at: datetime | None
    mode: str  # upsert (default) | sync
    deletes: Sequence[str]
    note: str | None
    verified: bool
    keep_edge_sources: bool


class Embedder(Protocol):
    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...


@dataclass
class CommitResult:
    snapshot_version: int | None  # None: nothing changed, no snapshot made
    content_hash: str
    changed_ids: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    queued: int = 0


def storage_label(ceid: str) -> str:
    return "Chunk" if ceid.startswith("chunk:") else "Entity"


def _chunks(rows: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for i in range(0, len(rows), ROWS_PER_STATEMENT):
        yield rows[i : i + ROWS_PER_STATEMENT]


class GraphWriter:
    def __init__(
        self, settings: Settings, driver: Driver, embedder: Embedder | None = None,
        ontology: Ontology | None = None, library: CypherLibrary | None = None,
    ) -> None:
        self.settings = settings
        self.driver = driver
        self.embedder = embedder
        self.ontology = ontology or load_ontology()
        self.cypher = library or CypherLibrary.load()
        self.tx_limit = tx_budget.limit_bytes(settings.neo4j_tx_memory)
        # while set and not open, reads of the graph wait (see substrate.graph.lookahead)
        self.read_gate: threading.Event | None = None
        self._idle: psycopg.Connection[Any] | None = None  # see _connection
        self._idle_lock = threading.Lock()

    # --- public -------------------------------------------------------------------------
    def commit(self, batch: GraphBatch, **options: Unpack[CommitOptions]) -> CommitResult:
        """Commit ``batch`` as one snapshot (see :class:`CommitOptions`). On return the
        snapshot is recorded and its event sent (or left in the outbox)."""
        with self.session() as session:
            return session.commit(batch, **options)

    @contextlib.contextmanager
    def session(self, pipelined: bool = False, memory: SessionMemory | None = None
                ) -> Iterator[WriteSession]:
        """Hold the writers' lock for several commits (after reconciling what a crashed
        writer left). ``pipelined``: each snapshot's PostgreSQL record (intent -> snapshot,
        change log, audit), the clearing of its mark and its event run in a background
        thread while the next batch is read, checked and diffed (that reads the graph after
        the Neo4j commit, which is all it depends on). A commit then returns once Neo4j has
        committed; the session's end waits for the rest and raises its error. A crash in
        between leaves a marked intent, which reconciliation completes (as for any crash
        after the Neo4j commit). ``memory``: what an earlier session of the same import
        learned of the graph (see ``session_memory``), kept when no other writer came in
        between; the session adds to it."""
        conn = self._connection()
        try:
            with snapshots.writers_lock(conn), \
                    ThreadPoolExecutor(max_workers=4, thread_name_prefix="writer") as pool:
                reconcile_locked(conn, self.driver, self.cypher)  # a crashed writer's leftovers
                if memory is not None:
                    memory.resume(snapshots.next_version(conn))
                session = WriteSession(self, conn, pool, pipelined, memory or SessionMemory())
                try:
                    yield session
                except BaseException:
                    session.close(raise_errors=False)
                    raise
                session.close()
            if session.unpublished:  # after the lock: on the same connection
                events.publish_pending(self.settings, known=session.unpublished, conn=conn)
        except BaseException:
            conn.close()
            raise
        self._keep(conn)

    def _connection(self) -> psycopg.Connection[Any]:
        """The connection the last session ended with, when it still answers, else a new
        one (opening one costs ~10 ms here: a history replay commits hundreds of snapshots,
        each in a session of its own)."""
        with self._idle_lock:
            conn, self._idle = self._idle, None
        if conn is not None:
            try:
                conn.execute("SELECT 1")
                return conn
            except psycopg.Error:  # the server went away since: a new one
                conn.close()
        return psycopg.connect(self.settings.postgres_dsn, autocommit=True)

    def _keep(self, conn: psycopg.Connection[Any]) -> None:
        """Keep ``conn`` for the next session (one kept; another is closed)."""
        idle = psycopg.pq.TransactionStatus.IDLE
        if conn.closed or conn.broken or conn.info.transaction_status != idle:
            conn.close()
            return
        with self._idle_lock:
            extra, self._idle = self._idle, conn
        if extra is not None:
            extra.close()

    def _record_intent(
        self, conn: psycopg.Connection[Any], version: int, tenant: str, valid_at: datetime,
        source: str, digest: Future[str], changes: d.ChangeSet, note: str | None,
    ) -> bytes:
        rows = self._change_rows(changes)
        with conn.transaction():
            return intents.record(conn, version, tenant, valid_at, source, digest.result(),
                                  rows, note)

    # --- steps --------------------------------------------------------------------------
    def _split_by_confidence(
        self, batch: GraphBatch, verified: bool
    ) -> tuple[list[NodeRecord], list[EdgeRecord], list[QueueItem]]:
        threshold = 0.0 if verified else self.settings.verify_threshold
        pending = [QueueItem(r, "ambiguous or unverified") for r in batch.pending]
        nodes, held = [], set()
        for n in batch.nodes:
            if n.confidence < threshold:
                pending.append(QueueItem(n, f"confidence {n.confidence} < {threshold}"))
                held.add(n.ceid)
            else:
                nodes.append(n)
        edges = []
        for e in batch.edges:
            if e.confidence < threshold:
                pending.append(QueueItem(e, f"confidence {e.confidence} < {threshold}"))
            elif e.src in held or e.dst in held:
                pending.append(QueueItem(e, "an endpoint is waiting for verification"))
            else:
                edges.append(e)
        return nodes, edges, pending

    def _check(
        self, tenant: str, batch: GraphBatch, deletes: Sequence[str], pool: ThreadPoolExecutor,
        prior: _Prior, known: Mapping[str, str] | None = None,
        absent: Callable[[str], bool] | None = None,
    ) -> tuple[dict[str, d.LIVE_NODE], dict[str, str], set[str]]:
        """Reject the batch on any problem of any record (positions are indexes into
        ``batch.nodes``/``batch.edges``); return the live nodes it touches, the element ids
        of the nodes it names that exist (its own nodes, live or closed, and its edges'
        other, live ends) and the ids of every live node it names. ``known``: nodes known
        live, with their element ids (a write session's own), not read again as ends;
        ``absent``: says which nodes surely do not exist (not read)."""
        wanted = {n.ceid for n in batch.nodes} | {x for x in deletes if "-[" not in x}
        endpoints = ({e.src for e in batch.edges} | {e.dst for e in batch.edges}) - wanted
        known_ends = {c: known[c] for c in endpoints if c in known} if known else {}
        unknown_ends = {c for c in endpoints - known_ends.keys()
                        if absent is None or not absent(c)}
        live_endpoints = pool.submit(self._live_ceids, tenant, unknown_ends)  # both at once
        # in sync mode the source's live nodes are read anyway: only the others are looked up
        sourced = prior.source_nodes.result() if prior.source_nodes else {}
        found = {c: {**sourced[c], "live": True} for c in wanted if c in sourced}
        unread = wanted - set(found)
        if absent is not None:
            unread = {c for c in unread if not absent(c)}
        found.update(self._live_nodes(tenant, sorted(unread)))
        live = {c: n for c, n in found.items() if n["live"]}
        ends = {**known_ends, **live_endpoints.result()}
        live_ids = set(live) | set(ends)
        named = live_ids | {n.ceid for n in batch.nodes}
        problems = validate_batch(batch.nodes, batch.edges, self.ontology, named)
        problems += validate_queued(batch.pending, self.ontology)
        problems += [Problem(x, "delete of an element that is not live") for x in deletes
                     if "-[" not in x and x not in live]
        if problems:
            raise ValidationFailed(
                f"batch rejected: {len(problems)} problem(s); nothing was written",
                [p.to_dict() for p in problems],
            )
        return live, {**ends, **{c: n["element_id"] for c, n in found.items()}}, live_ids

    def _read_prior(
        self, pool: ThreadPoolExecutor, tenant: str, source: str, mode: str,
        nodes: list[NodeRecord], edges: list[EdgeRecord], keep_edge_sources: bool,
        known_absent: Callable[[str, str, str], bool] | None = None,
    ) -> _Prior:
        """Start the reads of what the graph holds before the batch. In sync mode the
        source's live nodes and edges are read whole (to withdraw what the batch no longer
        says); the batch's edges are among the source's own unless they keep their sources,
        so they need no read of their own. Otherwise the edges between nodes the batch does
        not carry are read now; those touching a batch node only after the nodes are read,
        and only when both ends are live (a fresh load's edges need no read). Edges
        ``known_absent`` (key, start, end) says are not live are never read."""
        sync = mode == "sync"
        source_nodes = pool.submit(self._source_nodes, tenant, source) if sync else None
        source_edges = pool.submit(self._source_edges, tenant, source) if sync else None
        if sync and not keep_edge_sources:
            assert source_edges is not None
            return _Prior(source_edges, [], source_nodes, source_edges)
        carried = {n.ceid for n in nodes}
        early: list[tuple[str, str, str]] = []
        late: list[tuple[str, str, str]] = []
        for e in edges:
            key = (d.edge_key(e), e.src, e.dst)
            if known_absent is None or not known_absent(*key):
                (late if e.src in carried or e.dst in carried else early).append(key)
        live_edges = pool.submit(self._live_edges, tenant, [(k, src) for k, src, _ in early])
        return _Prior(live_edges, late, source_nodes, source_edges)

    def _diff(
        self, tenant: str, source: str, nodes: list[NodeRecord], edges: list[EdgeRecord],
        deletes: Sequence[str], live: dict[str, d.LIVE_NODE], live_ids: set[str],
        prior: _Prior,
    ) -> d.ChangeSet:
        """``live_ids``: the live nodes among the batch's nodes and edge endpoints."""
        late = [(key, src) for key, src, dst in prior.late
                if src in live_ids and dst in live_ids]
        live_edges = {**prior.live_edges.result(), **self._live_edges(tenant, late)}
        changes = d.ChangeSet()
        d.diff_nodes(nodes, live, set(), source, changes)
        seen = d.diff_edges(edges, live_edges, changes)
        if prior.source_nodes and prior.source_edges:  # sync: a node the batch's edges still
            # use is not withdrawn
            asserted = {n.ceid for n in nodes} | {e.src for e in edges} | {e.dst for e in edges}
            d.sync_removals(source, asserted, seen, prior.source_nodes.result(),
                            prior.source_edges.result(), changes)
        self._apply_deletes(tenant, deletes, live, changes)
        self._close_touching(tenant, changes)
        return changes

    def _apply_deletes(
        self, tenant: str, deletes: Sequence[str], live: dict[str, d.LIVE_NODE],
        changes: d.ChangeSet,
    ) -> None:
        edge_keys = [x for x in deletes if "-[" in x]
        found = self._live_edges(tenant, [(k, k.split("-[", 1)[0]) for k in edge_keys])
        missing = [k for k in edge_keys if k not in found]
        if missing:
            raise ValidationFailed(
                "batch rejected: delete of edges that are not live; nothing was written",
                [Problem(k, "delete of an element that is not live").to_dict() for k in missing],
            )
        changes.edge_closes += list(found.items())
        changes.node_closes += [(c, live[c]) for c in deletes if "-[" not in c]

    def _close_touching(self, tenant: str, changes: d.ChangeSet) -> None:
        closing = {k for k, _ in changes.edge_closes}
        for label, ceids in self._by_label([c for c, _ in changes.node_closes]).items():
            rows = self._read("graph/edges_touching", {"label": label}, tenant=tenant,
                              ceids=ceids)
            for r in rows:
                if r["key"] not in closing:
                    changes.edge_closes.append((r["key"], dict(r)))
                    closing.add(r["key"])

    # --- reads --------------------------------------------------------------------------
    def _read(self, name: str, ctx: dict[str, Any], **params: Any) -> list[dict[str, Any]]:
        gate = self.read_gate
        if gate is not None:
            gate.wait()
        records, _, _ = self.driver.execute_query(
            self.cypher.text(name, **ctx), params, routing_="r"
        )
        return [r.data() for r in records]

    @staticmethod
    def _by_label(ceids: Iterable[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for c in ceids:
            out[storage_label(c)].append(c)
        return out

    def _tenant_has_nodes(self, tenant: str) -> bool:
        return bool(self._read("graph/tenant_has_nodes", {}, tenant=tenant)[0]["found"])

    def _live_nodes(self, tenant: str, ceids: list[str]) -> dict[str, dict[str, Any]]:
        out = {}
        for label, group in self._by_label(ceids).items():
            for r in self._read("graph/live_nodes", {"label": label}, tenant=tenant, ceids=group):
                out[r["ceid"]] = r
        return out

    def _live_ceids(self, tenant: str, ceids: Iterable[str]) -> dict[str, str]:
        """Which of ``ceids`` are live, with their element ids (the diff needs no properties
        of nodes that are only edge endpoints)."""
        out: dict[str, str] = {}
        for label, group in self._by_label(sorted(ceids)).items():
            for r in self._read("graph/live_ceids", {"label": label}, tenant=tenant,
                                ceids=group):
                out.update(r["live"])
        return out

    def _live_edges(self, tenant: str, keys: list[tuple[str, str]]) -> dict[str, d.LIVE_EDGE]:
        """The live edges among ``keys``: (key, start node) pairs."""
        out = {}
        for (rel_type, src_label), rows in edge_rows(keys).items():
            if not self.ontology.has_type(rel_type):
                continue
            ctx = {"rel_type": rel_type, "src_label": src_label}
            for r in self._read("graph/live_edges", ctx, tenant=tenant, rows=rows):
                out[r["key"]] = r
        return out

    def _source_nodes(self, tenant: str, source: str) -> dict[str, d.LIVE_NODE]:
        return {
            r["ceid"]: r
            for label in ("Entity", "Chunk")
            for r in self._read("graph/source_nodes", {"label": label}, tenant=tenant,
                                source=source)
        }

    def _source_edges(self, tenant: str, source: str) -> dict[str, d.LIVE_EDGE]:
        return {r["key"]: r for r in self._read("graph/source_edges", {}, tenant=tenant,
                                                  source=source)}

    # --- change log + embeddings --------------------------------------------------------
    @staticmethod
    def _touched(changes: d.ChangeSet) -> set[str]:
        return {n.ceid for n in changes.node_adds} | {n.ceid for n, _ in changes.node_updates}

    @staticmethod
    def _change_rows(changes: d.ChangeSet) -> list[snapshots.ChangeRow]:
        rows = [snapshots.ChangeRow("node", n.ceid, "add", None, d.node_payload(n))
                for n in changes.node_adds]
        rows += [snapshots.ChangeRow("node", n.ceid, "update", live["props"], d.node_payload(n))
                 for n, live in changes.node_updates]
        rows += [snapshots.ChangeRow("node", c, "update", {"sources": None}, {"sources": s})
                 for c, s in changes.node_source_drops]
        rows += [snapshots.ChangeRow("node", c, "close", live.get("props", live), None)
                 for c, live in changes.node_closes]
        added = {k: e for k, e in changes.edge_adds}
        for key, before in changes.edge_closes:
            after = added.pop(key, None)
            op = "update" if after is not None else "close"
            payload = None if after is None else d.edge_payload(after)
            rows.append(snapshots.ChangeRow("edge", key, op, dict(before), payload))
        rows += [snapshots.ChangeRow("edge", k, "add", None, d.edge_payload(e))
                 for k, e in added.items()]
        return rows

    def _vector_targets(self, nodes: list[NodeRecord]) -> list[NodeRecord]:
        return [n for n in nodes if self.ontology.labels[n.label].vector]

    def _check_budget(self, changes: d.ChangeSet, targets: list[NodeRecord]) -> None:
        """Raise BatchTooLarge when the write would not fit one Neo4j transaction
        (``targets``: the nodes to embed)."""
        vectors = len(targets) if self.embedder is not None else 0
        dimensions = int(getattr(self.embedder, "dimensions", 0) or 0)
        tx_budget.check(changes, self.tx_limit, vectors, dimensions)

    def _embed(self, targets: list[NodeRecord]) -> dict[str, list[float]]:
        """Vectors of ``targets`` (nodes of labels with a vector, see _vector_targets)."""
        if self.embedder is None or not targets:
            return {}
        texts = [embedding_text(n) for n in targets]
        vectors = self.embedder.embed_documents(texts)
        return {n.ceid: v for n, v in zip(targets, vectors, strict=True)}

    def _record_model(self, conn: psycopg.Connection[Any],
                      embeddings: dict[str, list[float]]) -> None:
        if not embeddings or self.embedder is None:
            return
        model = str(getattr(self.embedder, "model_id", "unknown"))
        dims = len(next(iter(embeddings.values())))
        indexes = {"chunk_embedding" if c.startswith("chunk:") else "entity_embedding"
                   for c in embeddings}
        known = embedding_registry.recorded(conn)
        for index in sorted(indexes):
            if index in known and known[index] != (model, dims):
                raise Unavailable(
                    f"{index} holds vectors of {known[index][0]}; this writer embeds with "
                    f"{model}: run `substrate reembed` first", {"index": index})
            embedding_registry.record(conn, index, model, dims)

    @staticmethod
    def _counts(changes: d.ChangeSet) -> dict[str, int]:
        return {
            "nodes_added": len(changes.node_adds), "nodes_updated": len(changes.node_updates),
            "nodes_closed": len(changes.node_closes), "edges_added": len(changes.edge_adds),
            "edges_closed": len(changes.edge_closes),
        }

    # --- the Neo4j transaction ----------------------------------------------------------
    def _write_neo4j(self, write: _NeoWrite, changes: d.ChangeSet, rows: Rows,
                     before_commit: Callable[[dict[str, str]], None] | None = None,
                     ) -> tuple[list[str], dict[str, str]]:
        """Run the write; its bookmarks (raw values) go into the snapshot's ``graph.updated``
        event, so other processes' routed reads at this snapshot wait for it too. The
        transaction commits only after the intent has (``write.intent``). Returns the
        bookmarks and the element ids of the nodes it created. ``before_commit``: given those
        element ids once the statements and the mark have run, before each COMMIT (again
        when the driver runs the transaction again). ``rows``: the statements' rows, built
        while preparing (:func:`~substrate.graph.neo4j_write.rows_for`)."""
        from substrate.graph.neo4j_write import WritePlan

        plan = WritePlan(self.cypher, self.ontology, write.tenant, write.source, write.version,
                         write.valid_at, MAXV, write.existing)
        mark = self.cypher.text("graph/write_mark")

        def work(tx: ManagedTransaction) -> None:
            plan.run(tx, changes, rows)
            write.intent.result()  # raises: the transaction rolls back, nothing committed
            faults.point("after_intent")
            run_statement(tx, mark, version=write.version, tenant=write.tenant,
                          content_hash=write.digest.result())
            if before_commit is not None:
                before_commit(plan.created)

        # the bookmark manager of execute_query: the writer's reads after this write (routed
        # to any cluster member) wait until the member has it (read-your-writes)
        with self.driver.session(
                bookmark_manager=self.driver.execute_query_bookmark_manager) as session:
            session.execute_write(work)
            return sorted(session.last_bookmarks().raw_values), plan.created


class WriteSession:
    """Commits under one hold of the writers' lock (see :meth:`GraphWriter.session`)."""

    def __init__(self, writer: GraphWriter, conn: psycopg.Connection[Any],
                 pool: ThreadPoolExecutor, pipelined: bool,
                 memory: SessionMemory | None = None) -> None:
        self.writer = writer
        self.conn = conn
        self.pool = pool
        self.pipelined = pipelined
        # the snapshots whose events the session's end sends, with their changed ids
        self.unpublished: dict[int, list[str]] = {}
        self._finisher = (ThreadPoolExecutor(max_workers=1, thread_name_prefix="finish")
                          if pipelined else None)
        self._finish_conn: psycopg.Connection[Any] | None = None
        self._finishing: Future[None] | None = None  # the previous snapshot's record
        # per tenant, what its own commits read, created and closed (no other writer runs
        # while it holds the lock); forgotten on any failed commit
        self.memory = memory or SessionMemory()
        # the batch prepared while the one before it commits (see substrate.graph.lookahead)
        self._preparer = (ThreadPoolExecutor(max_workers=1, thread_name_prefix="prepare")
                          if pipelined else None)
        self._announced: Ahead | None = None  # by ahead(), for the commit of its ``after``
        self._inflight: Ahead | None = None  # started before the last commit's COMMIT
        self.ahead_used = 0  # commits that took a batch prepared ahead

    def ahead(self, after: GraphBatch, following: GraphBatch,
              **options: Unpack[CommitOptions]) -> None:
        """``following`` is the batch committed (with ``options``) right after ``after``:
        prepare it while ``after``'s transaction commits (pipelined sessions only; see
        :mod:`substrate.graph.lookahead`)."""
        if self._preparer is not None:
            self._announced = Ahead(after, following, dict(options))

    def commit(self, batch: GraphBatch, **options: Unpack[CommitOptions]) -> CommitResult:
        """See :meth:`GraphWriter.commit`."""
        tenant = options.get("tenant") or self.writer.settings.tenant
        try:
            return self._commit(batch, tenant, options)
        except BaseException:
            self.memory.forget(tenant)  # whatever the failure left: read again
            raise

    def _commit(self, batch: GraphBatch, tenant: str, options: CommitOptions) -> CommitResult:
        if self._finishing is not None and self._finishing.done():
            self._finishing.result()  # the previous snapshot's record failed: stop here
        prepared = self._take_ahead(batch, options)
        if prepared is None:
            prepared = self._prepare(batch, tenant, options)
        if isinstance(prepared, CommitResult):  # nothing changed
            return prepared
        return self._write(prepared, batch)

    def _prepare(self, batch: GraphBatch, tenant: str, options: CommitOptions
                 ) -> _Prepared | CommitResult:
        """Everything before the batch's write: reads, checks, diff, budget, embeddings (a
        CommitResult when nothing changes)."""
        w, conn, pool = self.writer, self.conn, self.pool
        source = options["source"]
        valid_at = options.get("valid_at") or datetime.now(UTC)
        mode, deletes = options.get("mode", "upsert"), options.get("deletes", ())
        keep_edge_sources = options.get("keep_edge_sources", False)
        if not keep_edge_sources:
            batch = GraphBatch(batch.nodes, [e if e.source == source else
                                             replace(e, source=source) for e in batch.edges],
                               batch.pending)
        nodes, edges, pending = w._split_by_confidence(batch, options.get("verified", False))
        memory = self.memory.begin(tenant, lambda: not w._tenant_has_nodes(tenant))
        # read while the nodes are read and checked; hashed while Neo4j works
        prior = w._read_prior(pool, tenant, source, mode, nodes, edges, keep_edge_sources,
                              memory.known_absent)
        digest = pool.submit(d.content_hash, nodes, edges, source, mode)
        with conn.transaction():  # the queue and the embedding model (the intent: below)
            version = snapshots.next_version(conn)
            live, existing, live_ids = w._check(tenant, batch, deletes, pool, prior,
                                                memory.live, memory.known_absent_node)
            queued = enqueue(conn, tenant, source, pending)  # queued items too
            changes = w._diff(tenant, source, nodes, edges, deletes, live, live_ids, prior)
            if changes.empty:
                return CommitResult(None, digest.result(), queued=queued)
            touched = w._touched(changes)  # once: a set per node made commits O(n²)
            targets = w._vector_targets([n for n in nodes if n.ceid in touched])
            w._check_budget(changes, targets)  # before the model's work and any write
            embeddings = w._embed(targets)
            w._record_model(conn, embeddings)
        rows = rows_for(changes, embeddings, existing, tenant, version, MAXV, source)
        return _Prepared(tenant, source, version, valid_at, options.get("note"), digest,
                         changes, embeddings, existing, live_ids, memory, queued, rows)

    def _write(self, p: _Prepared, batch: GraphBatch) -> CommitResult:
        """The prepared batch's snapshot: intent, Neo4j transaction, record."""
        w = self.writer
        # the intent (its change rows) is written to PostgreSQL while Neo4j runs the
        # statements, and committed before the Neo4j transaction commits
        intent = self.pool.submit(w._record_intent, self.conn, p.version, p.tenant,
                                  p.valid_at, p.source, p.digest, p.changes, p.note)
        write = _NeoWrite(p.tenant, p.source, p.version, p.valid_at, p.digest, intent,
                          p.existing)
        ahead, self._announced = self._announced, None
        if ahead is not None and ahead.after is not batch:
            ahead = None
        bookmarks, created = self._write_neo4j_marked(write, p, ahead)
        faults.point("after_neo4j_commit")
        if ahead is None:  # else remembered before the commit
            p.memory.remember(p.existing, p.live_ids, created, p.changes)
        self.memory.last_version = p.version
        changed = p.changes.changed_ids()
        self._record_snapshot(p.version, bookmarks, intent.result(), changed)
        return CommitResult(p.version, p.digest.result(), changed, w._counts(p.changes),
                            p.queued)

    def _start_next(self, ahead: Ahead, p: _Prepared, created: dict[str, str]) -> None:
        """Before ``ahead.after``'s COMMIT: remember what it wrote and start preparing the
        batch that follows (its reads wait for the commit). Run again (a transient error):
        forget the tenant and drop that preparation."""
        ahead.starts += 1
        if ahead.starts > 1:
            ahead.stale = True
            self.memory.forget(p.tenant)
            return
        assert self._preparer is not None
        p.memory.remember(p.existing, p.live_ids, created, p.changes)
        self.writer.read_gate = ahead.gate
        self._inflight = ahead
        tenant = ahead.options.get("tenant") or self.writer.settings.tenant
        ahead.future = self._preparer.submit(self._prepare, ahead.following, tenant,
                                             cast(CommitOptions, ahead.options))

    def _take_ahead(self, batch: GraphBatch, options: CommitOptions
                    ) -> _Prepared | CommitResult | None:
        """The prepared ``batch`` when it is the one announced; else None (after waiting
        for any other preparation: it uses the connection)."""
        ahead, self._inflight = self._inflight, None
        if ahead is None:
            return None
        if not ahead.matches(batch, options):
            ahead.drop()
            return None
        assert ahead.future is not None
        self.ahead_used += 1
        result: _Prepared | CommitResult = ahead.future.result()  # its error is this commit's
        return result

    def _drop_inflight(self) -> None:
        ahead, self._inflight = self._inflight, None
        if ahead is not None:
            ahead.drop()

    def _write_neo4j_marked(self, write: _NeoWrite, p: _Prepared, ahead: Ahead | None
                            ) -> tuple[list[str], dict[str, str]]:
        """The Neo4j transaction (returns its bookmarks and the element ids of the nodes
        it created); on failure settle the intent now
        (mark present: complete it; absent: discard it), or leave it to the reconciler when
        Neo4j cannot tell. ``ahead``: the batch to prepare while this one commits."""
        hook = None if ahead is None else partial(self._start_next, ahead, p)
        try:
            out = self.writer._write_neo4j(write, p.changes, p.rows, hook)
        except Exception as exc:
            self._drop_inflight()  # it uses the connection: finished before reconciling
            wait([write.intent])  # the intent's connection is this one
            self._settle()  # the previous snapshot's record first: then reconcile
            with contextlib.suppress(Exception):
                reconcile_locked(self.conn, self.writer.driver, self.writer.cypher)
            if tx_budget.is_memory_refusal(exc):  # the estimate was short: same answer
                raise BatchTooLarge(
                    "Neo4j refused the snapshot's transaction for its memory "
                    "(db.memory.transaction.max, NEO4J_TX_MEMORY); nothing was written: "
                    "commit it in smaller batches",
                    {"neo4j_code": getattr(exc, "code", None)}) from exc
            raise
        if ahead is not None:
            ahead.release()
        return out

    def _record_snapshot(self, version: int, bookmarks: list[str], rows: bytes,
                         changed: list[str]) -> None:
        """The intent becomes the snapshot; its mark is cleared. Pipelined: in the
        background, in version order (after the previous one), then its event is sent.
        ``changed``: its changed ids (the event's; read from the change log otherwise)."""
        if self._finisher is None:
            self._finish(self.conn, version, bookmarks, rows)
            self.unpublished[version] = changed
            return
        if self._finishing is not None:
            self._finishing.result()
        if self._finish_conn is None:
            self._finish_conn = psycopg.connect(self.writer.settings.postgres_dsn,
                                                autocommit=True)
        self._finishing = self._finisher.submit(self._finish, self._finish_conn, version,
                                                bookmarks, rows, changed)

    def _finish(self, conn: psycopg.Connection[Any], version: int, bookmarks: list[str],
                rows: bytes, changed: list[str] | None = None) -> None:
        """``changed``: the snapshot's changed ids, given to send its event (and any still
        unsent) now."""
        w = self.writer
        if not intents.complete(conn, version, bookmarks=bookmarks, rows=rows):
            raise Unavailable("the write's intent was reconciled away while its Neo4j "
                              "transaction ran", {"snapshot_version": version})
        faults.point("after_snapshot")
        clear_marks(w.driver, w.cypher, version)
        if changed is not None:
            events.publish_pending(w.settings, known={version: changed}, conn=conn)

    def _settle(self) -> BaseException | None:
        """Wait for the previous snapshot's record; its error, if any."""
        if self._finishing is None:
            return None
        wait([self._finishing])
        return self._finishing.exception()

    def close(self, raise_errors: bool = True) -> None:
        """Wait for the background work; raise its error (``raise_errors``) or log it."""
        self._drop_inflight()
        if self._preparer is not None:
            self._preparer.shutdown()
        error = self._settle()
        self._finishing = None
        if self._finisher is not None:
            self._finisher.shutdown()
        if self._finish_conn is not None:
            self._finish_conn.close()
        if error is not None:
            if raise_errors:
                raise error
            log.error("recording a snapshot failed (reconciliation completes it): %s", error)


@dataclass(frozen=True)
class _Prior:
    """The reads of the graph before a batch, started at once (see ``_read_prior``)."""

    live_edges: Future[dict[str, d.LIVE_EDGE]]  # the batch's live edges, but ``late``'s
    late: list[tuple[str, str, str]]  # (key, start, end) of edges with a batch node at an
    # end: read after the nodes
    source_nodes: Future[dict[str, d.LIVE_NODE]] | None  # sync mode only
    source_edges: Future[dict[str, d.LIVE_EDGE]] | None


@dataclass(frozen=True)
class _NeoWrite:
    """One snapshot's Neo4j transaction: what it writes besides the changes."""

    tenant: str
    source: str
    version: int
    valid_at: datetime
    digest: Future[str]  # the batch's content hash (its WriteMark and intent carry it)
    intent: Future[bytes]  # the intent committed in PostgreSQL (its change rows)
    existing: dict[str, str]  # element ids of the nodes that exist (see ``_check``)


@dataclass(frozen=True)
class _Prepared:
    """A batch read, checked and diffed, ready for its write (``WriteSession._prepare``)."""

    tenant: str
    source: str
    version: int
    valid_at: datetime
    note: str | None
    digest: Future[str]
    changes: d.ChangeSet
    embeddings: dict[str, list[float]]
    existing: dict[str, str]  # element ids of the nodes that exist (see ``_check``)
    live_ids: set[str]
    memory: TenantMemory
    queued: int
    rows: Rows  # the Neo4j statements' rows (built here: off the transaction's time)


def embedding_text(node: NodeRecord) -> str:
    parts = [node.name] + [str(node.props[k]) for k in TEXT_PROPS if node.props.get(k)]
    return ". ".join(parts)[:2000]


def run_statement(tx: ManagedTransaction, query: str, **params: Any) -> None:
    tx.run(query, params).consume()
