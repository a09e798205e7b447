"""Cypher templates as files, loaded and checked at start-up (in the manner of aiosql).

Every file under ``cypher/`` starts with a header of ``// key: value`` lines::

    // name: retrieval/dependencies
    // version: 3
    // mode: read
    // params: tenant, ceid, depth
    // returns: target, hops
    // serves: RSN-UC-01
    // doc: What a service depends on, up to $depth hops.

``.cypher`` files are sent as they are; ``.cypher.j2`` files are Jinja2 templates (with
``StrictUndefined``) used only for structure (allow-listed labels, optional clauses); every
value from a user goes in as a ``$param``. A ``// sample:`` JSON line gives a template a
context for the start-up check.

Two optional lines serve the Neo4j Browser procedures (:mod:`substrate.browser`):
``// types: ceid:STRING, limit:INTEGER`` gives parameter types where the conventional ones do
not fit, and ``// procedures: {"": {...}, "in": {...}}`` names the Jinja contexts installed as
procedures (suffix -> context; default: the sample). Files under ``cypher/browser/`` are
Browser scripts (``:param`` lines + a query), not templates: the loader skips them.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from neo4j import Driver

from substrate.errors import TemplateError
from substrate.settings import PROJECT_ROOT

CYPHER_DIR = PROJECT_ROOT / "cypher"
REQUIRED = ("name", "version", "mode", "params", "returns", "serves", "doc")
NOT_TEMPLATES = "browser"  # cypher/browser/: saved scripts for Neo4j Browser
_TYPE = re.compile(r"^(?:LIST OF )?(?:STRING|INTEGER|FLOAT|BOOLEAN|MAP|ANY)$")
_HEADER = re.compile(r"^//\s*([a-z_]+)\s*:\s*(.*)$")
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_ENV = jinja2.Environment(
    undefined=jinja2.StrictUndefined,
    autoescape=False,
    loader=jinja2.FileSystemLoader(str(CYPHER_DIR)),  # for {% import "_macros.j2" %}
)


@dataclass(frozen=True)
class CypherTemplate:
    name: str
    version: int
    mode: str
    params: tuple[str, ...]
    returns: tuple[str, ...]
    serves: str
    doc: str
    body: str
    path: Path
    is_template: bool
    sample: dict[str, Any] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    procedures: dict[str, dict[str, Any]] = field(default_factory=dict)

    def render(self, **context: Any) -> str:
        """The query for a Jinja context. Contexts are a few structural values (labels,
        depths, directions), so each rendering is remembered: the hot path renders nothing."""
        if not self.is_template:
            return self.body
        try:
            key = json.dumps(context, sort_keys=True)
        except TypeError:  # a context value JSON cannot hold: render it afresh
            return _render(self.name, self.body, context)
        return _render_cached(self.name, self.body, key)

    def header(self) -> dict[str, Any]:
        return {
            "name": self.name, "version": self.version, "mode": self.mode,
            "params": list(self.params), "returns": list(self.returns),
            "serves": self.serves, "doc": self.doc,
        }


@functools.lru_cache(maxsize=512)
def _compiled(body: str) -> jinja2.Template:
    return _ENV.from_string(body)


def _render(name: str, body: str, context: dict[str, Any]) -> str:
    try:
        return _compiled(body).render(**context)
    except jinja2.TemplateError as exc:
        raise TemplateError(f"cannot render {name}: {exc}") from exc


@functools.lru_cache(maxsize=4096)
def _render_cached(name: str, body: str, context_json: str) -> str:
    return _render(name, body, json.loads(context_json))


def _split_list(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def _parse_types(path: Path, value: str, params: tuple[str, ...]) -> dict[str, str]:
    """``ceid:STRING, ceids:LIST OF STRING`` -> {name: TYPE}; names must be parameters."""
    types = {}
    for item in _split_list(value):
        name, _, kind = (x.strip() for x in item.partition(":"))
        kind = " ".join(kind.upper().split())
        if name not in params or not _TYPE.match(kind):
            raise TemplateError(f"{path}: bad types entry {item!r} (a parameter and one of "
                                "STRING, INTEGER, FLOAT, BOOLEAN, MAP, ANY or LIST OF them)")
        types[name] = kind
    return types


def _parse_procedures(path: Path, value: str) -> dict[str, dict[str, Any]]:
    try:
        procedures = json.loads(value)
    except json.JSONDecodeError as exc:
        raise TemplateError(f"{path}: procedures is not JSON: {exc}") from exc
    if not isinstance(procedures, dict) or not all(
        isinstance(k, str) and re.fullmatch(r"[a-z0-9_]*", k) and isinstance(v, dict)
        for k, v in procedures.items()
    ):
        raise TemplateError(f"{path}: procedures must map suffixes [a-z0-9_]* to contexts")
    return procedures


def parse_template(path: Path, root: Path = CYPHER_DIR) -> CypherTemplate:
    lines = path.read_text().splitlines()
    header: dict[str, str] = {}
    body_start = 0
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if not m:
            body_start = i
            break
        header[m.group(1)] = m.group(2).strip()
    missing = [k for k in REQUIRED if k not in header]
    if missing:
        raise TemplateError(f"{path}: header lacks {', '.join(missing)}")
    rel = path.relative_to(root).as_posix().removesuffix(".j2").removesuffix(".cypher")
    if header["name"] != rel:
        raise TemplateError(f"{path}: header name {header['name']!r} must be {rel!r}")
    if header["mode"] not in ("read", "write"):
        raise TemplateError(f"{path}: mode must be read or write")
    body = "\n".join(lines[body_start:]).strip()
    is_template = path.suffix == ".j2"
    params = _split_list(header["params"])
    if not is_template:
        used = set(_PARAM.findall(body))
        if used != set(params):
            raise TemplateError(
                f"{path}: params header {sorted(params)} != parameters used {sorted(used)}"
            )
    else:
        try:
            _ENV.parse(body)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(f"{path}: template syntax error: {exc}") from exc
    return CypherTemplate(
        name=rel, version=int(header["version"]), mode=header["mode"], params=params,
        returns=_split_list(header["returns"]), serves=header["serves"], doc=header["doc"],
        body=body, path=path, is_template=is_template,
        sample=json.loads(header.get("sample", "{}")),
        types=_parse_types(path, header.get("types", ""), params),
        procedures=_parse_procedures(path, header.get("procedures", "{}")),
    )


@functools.lru_cache(maxsize=4096)
def macro(name: str, *args: str) -> str:
    """One fragment of ``cypher/_macros.j2`` rendered on one line, e.g.
    ``macro("node_at", "n", "__")`` for the /cypher scope rewriter."""
    module = _ENV.get_template("_macros.j2").module
    text = str(getattr(module, name)(*args))
    return " ".join(text.split())


class CypherLibrary:
    """All templates by name. ``load()`` refuses to return with any broken file."""

    def __init__(self, templates: dict[str, CypherTemplate]) -> None:
        self.templates = templates

    @classmethod
    def load(cls, root: Path = CYPHER_DIR) -> CypherLibrary:
        found: dict[str, CypherTemplate] = {}
        errors = []
        for path in sorted(root.rglob("*.cypher*")):
            if path.relative_to(root).parts[0] == NOT_TEMPLATES:
                continue
            try:
                t = parse_template(path, root)
                found[t.name] = t
            except TemplateError as exc:
                errors.append(exc.message)
        if errors:
            raise TemplateError("broken Cypher templates: " + "; ".join(errors), errors)
        return cls(found)

    def get(self, name: str) -> CypherTemplate:
        try:
            return self.templates[name]
        except KeyError:
            raise TemplateError(f"no Cypher template named {name!r}") from None

    def text(self, name: str, **context: Any) -> str:
        return self.get(name).render(**context)

    def check(self, driver: Driver) -> list[str]:
        """EXPLAIN every template against the server (samples for Jinja ones); fail on any."""
        errors = []
        for t in self.templates.values():
            try:
                query = t.render(**t.sample)
                driver.execute_query("EXPLAIN " + query, {p: None for p in t.params})
            except Exception as exc:  # noqa: BLE001 - collect and report all
                errors.append(f"{t.name}: {exc}")
        if errors:
            raise TemplateError("Cypher templates failed the server check", errors)
        return sorted(self.templates)
