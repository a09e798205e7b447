"""The retrieval logic inside Neo4j Browser: read templates as Cypher-defined procedures.

Every read template under ``cypher/retrieval/`` becomes a procedure (APOC Extended
``apoc.custom.installProcedure``, stored in the ``system`` database, callable after APOC's
refresh, ~2 s)::

    CALL custom.substrate_retrieval_dependencies('acme', 9007199254740990,
                                                 ['public', 'internal'], 'service:checkout')

Arguments: ``tenant``, ``snapshot`` (the template's ``$v``; ``LIVE`` = the current graph),
``clearance`` (the classifications the caller may read), then the template's own parameters
in header order (``$k`` is ``top_k``: APOC wants names of two characters or more). The
scoping stays inside the Cypher, exactly as the gateway runs it. A Jinja template is
installed once per context of its ``// procedures:`` header line (suffix -> context), else
with its ``// sample:`` context. Installing is idempotent: a procedure whose signature and
statement are unchanged is left alone; ``substrate_*`` procedures that no template produces
any more are dropped.

``cypher/browser/*.cypher`` are saved scripts (``:param`` lines and a query per use case);
:func:`favorites_zip` packs them into the archive Neo4j Browser imports as favorites.
"""

from __future__ import annotations

import hashlib
import re
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neo4j import Driver

from substrate.cypher import CYPHER_DIR, CypherLibrary, CypherTemplate
from substrate.errors import StackError, TemplateError

PREFIX = "substrate_"
AREA = "retrieval/"
DATABASE = "neo4j"
LIVE = 2**53 - 2  # a snapshot inside every open validity interval (they end at 2**53 - 1)
WAIT_S = 30.0
SCOPE = ("tenant", "v", "clearance")
JURISDICTIONS = "jurisdictions"  # the last argument, optional: null = no restriction
RENAMED = {"v": "snapshot", "k": "top_k"}
CONVENTIONAL_TYPES = {
    "tenant": "STRING", "v": "INTEGER", "clearance": "LIST OF STRING", "ceid": "STRING",
    "ceids": "LIST OF STRING", "seeds": "LIST OF STRING", "name": "STRING", "lucene": "STRING",
    "k": "INTEGER", "limit": "INTEGER", "depth": "INTEGER", "min_weight": "FLOAT",
    "include_inferred": "BOOLEAN", "embedding": "LIST OF FLOAT", "types": "LIST OF STRING",
    JURISDICTIONS: "LIST OF STRING",
}
DEFAULTS = {"min_weight": "0.0", "include_inferred": "false", "limit": "100", "k": "10",
            JURISDICTIONS: "null"}
BROWSER_DIR = CYPHER_DIR / "browser"
FAVORITES_ZIP = BROWSER_DIR / "substrate-favorites.zip"
FAVORITES_FOLDER = "Substrate Reasoning"
_ZIP_TIME = (2026, 1, 1, 0, 0, 0)  # fixed: the archive is byte-for-byte reproducible


@dataclass(frozen=True)
class Procedure:
    name: str  # called as custom.<name>
    template: str
    signature: str
    statement: str
    description: str

    @property
    def digest(self) -> str:
        return digest(self.signature, self.statement)


def digest(signature: str, statement: str) -> str:
    return hashlib.sha256(f"{signature}\n{statement}".encode()).hexdigest()[:12]


def procedure_name(template: str, suffix: str = "") -> str:
    base = PREFIX + re.sub(r"[^a-z0-9]+", "_", template.lower()).strip("_")
    return f"{base}_{suffix}" if suffix else base


def param_type(t: CypherTemplate, param: str) -> str:
    """The header's ``// types:`` entry, else the conventional type, else ANY."""
    return t.types.get(param) or CONVENTIONAL_TYPES.get(param) or "ANY"


def _ordered_params(t: CypherTemplate, statement: str = "") -> list[str]:
    """Scope, the template's own, then ``jurisdictions`` when the statement uses it (the scope
    macros do): optional, so saved calls without it keep working."""
    own = [p for p in t.params if p not in (*SCOPE, JURISDICTIONS)]
    uses = re.search(rf"\${JURISDICTIONS}\b", statement) or JURISDICTIONS in t.params
    return [*SCOPE, *own, *([JURISDICTIONS] if uses else [])]


def _inputs(t: CypherTemplate, statement: str = "") -> str:
    params = _ordered_params(t, statement)
    optional = 0  # defaults only on a trailing run (arguments are positional)
    for p in reversed(params):
        if p not in DEFAULTS:
            break
        optional += 1
    parts = []
    for i, p in enumerate(params):
        default = f" = {DEFAULTS[p]}" if i >= len(params) - optional else ""
        parts.append(f"{RENAMED.get(p, p)}{default} :: {param_type(t, p)}")
    return ", ".join(parts)


def _statement(t: CypherTemplate, ctx: dict[str, Any]) -> str:
    text = t.render(**ctx)
    for old, new in RENAMED.items():
        text = re.sub(rf"\${old}\b", f"${new}", text)
    return text


def build(t: CypherTemplate, suffix: str, ctx: dict[str, Any]) -> Procedure:
    name = procedure_name(t.name, suffix)
    outputs = ", ".join(f"{c} :: ANY" for c in t.returns)
    statement = _statement(t, ctx)
    signature = f"{name}({_inputs(t, statement)}) :: ({outputs})"
    variant = f" {ctx}" if ctx else ""
    description = (f"{t.doc} [{t.name} v{t.version}{variant}; serves {t.serves}; "
                   f"sha {digest(signature, statement)}]")
    return Procedure(name, t.name, signature, statement, description)


def plan(library: CypherLibrary) -> tuple[list[Procedure], dict[str, str]]:
    """One procedure per read retrieval template and context (sorted by name), and the
    templates left out with the reason (a procedure needs the scope parameters)."""
    out, skipped = [], {}
    for t in library.templates.values():
        if not t.name.startswith(AREA) or t.mode != "read":
            continue
        missing = [p for p in SCOPE if p not in t.params]
        if missing:
            skipped[t.name] = f"lacks the scope parameters {missing}"
            continue
        variants = t.procedures or {"": t.sample if t.is_template else {}}
        out += [build(t, suffix, ctx) for suffix, ctx in variants.items()]
    names = [p.name for p in out]
    if len(set(names)) != len(names):
        raise TemplateError("two templates give the same procedure name", sorted(names))
    return sorted(out, key=lambda p: p.name), skipped


def procedures(library: CypherLibrary) -> list[Procedure]:
    return plan(library)[0]


# --- install --------------------------------------------------------------------------------
def _system(driver: Driver, library: CypherLibrary, template: str,
            **params: Any) -> list[dict[str, Any]]:
    records, _, _ = driver.execute_query(library.text(template), params, database_="system")
    return [r.data() for r in records]


def install(driver: Driver, library: CypherLibrary, database: str = DATABASE,
            wait_s: float = WAIT_S) -> dict[str, list[str]]:
    """Install every retrieval procedure that is missing or changed, drop stale ones, and
    wait until the changed ones are callable. Returns the names by outcome."""
    planned, skipped = plan(library)
    wanted = {p.name: p for p in planned}
    stored = {r["name"]: r for r in _system(driver, library, "procedures/installed",
                                            database=database)
              if r["type"] == "procedure" and str(r["name"]).startswith(PREFIX)}
    changed = [p for n, p in wanted.items()
               if n not in stored or stored[n]["description"] != p.description
               or stored[n]["statement"] != p.statement]
    for p in changed:
        _system(driver, library, "procedures/install", signature=p.signature,
                statement=p.statement, database=database, description=p.description)
    stale = sorted(set(stored) - set(wanted))
    for name in stale:
        _system(driver, library, "procedures/drop", name=name, database=database)
    if changed:
        wait_callable(driver, library, {p.name: p.digest for p in changed}, database, wait_s)
    return {"installed": [p.name for p in changed], "dropped": stale,
            "unchanged": sorted(set(wanted) - {p.name for p in changed}),
            "skipped": [f"{name}: {why}" for name, why in sorted(skipped.items())]}


def wait_callable(driver: Driver, library: CypherLibrary, digests: dict[str, str],
                  database: str = DATABASE, wait_s: float = WAIT_S) -> None:
    """Poll until every ``custom.<name>`` is registered with the description of ``digest``."""
    deadline = time.monotonic() + wait_s
    pending = dict(digests)
    while pending:
        records, _, _ = driver.execute_query(library.text("procedures/registered"),
                                             {"prefix": "custom." + PREFIX}, database_=database)
        for r in records:
            name = str(r["name"]).removeprefix("custom.")
            if name in pending and f"sha {pending[name]}]" in str(r["description"]):
                del pending[name]
        if pending and time.monotonic() > deadline:
            raise StackError(f"procedures not callable after {wait_s:.0f}s (is APOC Extended "
                             "installed, apoc.custom.procedures.refresh set?)", sorted(pending))
        if pending:
            time.sleep(0.5)


# --- Browser favorites ------------------------------------------------------------------------
_PARAM_LINE = re.compile(r"^:param\s+([A-Za-z_][A-Za-z0-9_]*)\s*=>\s*(.+?);?\s*$")


def browser_scripts(root: Path = BROWSER_DIR) -> list[Path]:
    return sorted(root.glob("*.cypher"))


@dataclass(frozen=True)
class BrowserScript:
    title: str  # the first comment line: Browser shows it as the favorite's name
    params: dict[str, str]  # name -> Cypher expression (``:param name => expression``)
    query: str


def parse_script(text: str) -> BrowserScript:
    """A saved script: ``//`` comment lines, ``:param`` lines, then one query."""
    lines = text.strip().splitlines()
    if not lines or not lines[0].startswith("//"):
        raise TemplateError("a Browser script starts with a // title line")
    params, body = {}, []
    for line in lines:
        m = _PARAM_LINE.match(line.strip())
        if m:
            params[m.group(1)] = m.group(2)
        elif not line.lstrip().startswith("//"):
            body.append(line)
    query = "\n".join(body).strip().removesuffix(";").strip()
    if not query or ";" in query:
        raise TemplateError("a Browser script holds exactly one query after its :param lines")
    return BrowserScript(lines[0].lstrip("/ ").strip(), params, query)


def favorites_zip(out: Path, root: Path = BROWSER_DIR) -> Path:
    """The saved scripts as the archive Neo4j Browser imports (drop it on the Browser window:
    each ``<folder>/<name>.cypher`` becomes a favorite in that folder)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in browser_scripts(root):
            info = zipfile.ZipInfo(f"{FAVORITES_FOLDER}/{path.name}", _ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_text())
    return out
