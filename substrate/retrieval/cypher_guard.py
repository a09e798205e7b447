"""Text-level guard for the read-only ``POST /cypher`` endpoint (RSN-02).

One layer of three: this guard rejects on the text; the caller then runs ``EXPLAIN`` and checks
the plan is read-only, and executes in a READ transaction. The guard is fail-closed: whatever
it cannot analyse (an unterminated string or comment) is refused, and a write keyword used as
a name (a label ``:DELETE``, a variable ``create``) is refused too.

How the text is read:
* ``mask`` blanks comments (``//``, ``/* */``) and the contents of string literals, keeping the
  length, so ``RETURN 'CREATE' AS s`` passes and ``MATCH (n) /* */ DETACH DELETE n`` does not.
  Back-ticked names are un-quoted (``CALL `apoc`.`periodic`.`iterate` `` is still seen).
* One statement only: a ``;`` is allowed only at the end.
* Keywords are compared case-insensitively anywhere in the text — ``CALL { }`` subqueries
  included. Words after a ``.`` (property keys, namespaces) and ``$`` (parameters) are names.
  Refused: CREATE, MERGE, SET, DELETE, DETACH, REMOVE, DROP, FOREACH, INSERT, LOAD (CSV),
  ``... IN TRANSACTIONS``, USING PERIODIC COMMIT, USE (the database is the service's
  choice), GRANT, DENY, REVOKE, ALTER, RENAME, START/STOP DATABASE, TERMINATE, ENABLE,
  DEALLOCATE, REALLOCATE, DRYRUN, and SHOW — ``SHOW USERS/PRIVILEGES/SETTINGS`` disclose
  administration data, and the schema is readable through ``db.labels()`` and friends.
  EXPLAIN, PROFILE and CYPHER options are refused because the service adds its own EXPLAIN.
* ``CALL proc`` must name a procedure on ``ALLOWED_PROCEDURES`` (read-only ones); any
  namespaced invocation, procedure or function, must not match ``DENIED_ROUTINES``
  (writes, admin, file/network access, and ``apoc.cypher.*``/``apoc.when``/``apoc.do.*``,
  which would run a query string this guard cannot see). ``gds.graph.project`` is refused
  too: it allocates a catalog graph; ``gds.*.stream`` reads projections the GDS jobs keep.
* Row limits are not written into the query (a rewrite breaks on UNION, ORDER BY and
  subqueries); the caller reads at most ``limit + 1`` rows with ``take_rows`` and reports
  ``truncated`` when the extra row exists.
* A trailing ``AT('2026-10-01T00:00:00Z')`` / ``AT(42)`` / ``AT($ts)`` selects a snapshot
  (RSN-07); ``split_at_suffix`` removes it and returns what it named.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from itertools import islice
from typing import TypeVar

from substrate.errors import BadRequest, Forbidden

T = TypeVar("T")

DENIED_KEYWORDS: dict[str, str] = {
    **dict.fromkeys(("CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "FOREACH",
                     "INSERT", "LOAD"), "write clause"),
    **dict.fromkeys(("TRANSACTIONS", "TRANSACTION", "PERIODIC"), "batched write clause"),
    "USE": "database selection",
    **dict.fromkeys(("GRANT", "DENY", "REVOKE", "ALTER", "RENAME", "SHOW", "TERMINATE",
                     "ENABLE", "DEALLOCATE", "REALLOCATE", "DRYRUN"), "administration command"),
    **dict.fromkeys(("EXPLAIN", "PROFILE", "CYPHER"), "query prefix (the service adds EXPLAIN)"),
}
_DATABASE_COMMAND = re.compile(r"(?<![\w.$])(START|STOP)\s+DATABASES?\b", re.I)

ALLOWED_PROCEDURES: tuple[str, ...] = (
    "db.labels", "db.relationshiptypes", "db.propertykeys", "db.ping", "db.info",
    "db.schema.visualization", "db.schema.nodetypeproperties", "db.schema.reltypeproperties",
    "db.index.vector.querynodes", "db.index.vector.queryrelationships",
    "db.index.fulltext.querynodes", "db.index.fulltext.queryrelationships",
    "apoc.path.*", "apoc.neighbors.*", "apoc.algo.*",
    "apoc.meta.schema", "apoc.meta.data", "apoc.meta.stats", "apoc.meta.graph",
    "apoc.meta.nodetypeproperties", "apoc.meta.reltypeproperties",
    "gds.*.stream", "gds.*.stream.estimate", "gds.*.stats", "gds.*.stats.estimate",
    "gds.graph.list", "gds.version", "gds.list",
)
DENIED_ROUTINES: tuple[str, ...] = (
    "apoc.periodic.*", "apoc.create.*", "apoc.merge.*", "apoc.refactor.*", "apoc.nodes.delete",
    "apoc.nodes.link", "apoc.nodes.collapse", "apoc.cypher.*", "apoc.do.*", "apoc.when",
    "apoc.case", "apoc.custom.*", "apoc.trigger.*", "apoc.schema.assert", "apoc.load.*",
    "apoc.import.*", "apoc.export.*", "apoc.systemdb.*", "apoc.atomic.*", "apoc.lock.*",
    "apoc.util.sleep", "apoc.log.*", "apoc.warmup.*", "apoc.ttl.*", "apoc.uuid.*",
    "apoc.config.*", "apoc.graph.fromcypher", "apoc.graph.fromdocument",
    "gds.*.write*", "gds.*.mutate*", "gds.*.train*", "gds.graph.drop", "gds.graph.project*",
    "gds.graph.export*", "gds.graph.generate", "gds.graph.filter", "gds.graph.sample.*",
    "gds.model.drop", "gds.model.store", "gds.model.delete", "gds.model.publish",
    "gds.model.load", "gds.backup", "gds.restore",
    "dbms.*", "db.create*", "db.index.fulltext.create*", "db.index.fulltext.drop",
    "db.clearquerycaches", "db.checkpoint", "db.stats.*", "db.prepareforreplanning", "tx.*",
)

_WORD = re.compile(r"(?<![\w.$])[A-Za-z_]\w*")
_NAME = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_CALL = re.compile(rf"(?<![\w.$])CALL\s+({_NAME})", re.I)
_INVOCATION = re.compile(r"(?<![\w.$])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\s*\(")
_AT_SUFFIX = re.compile(r"(?<![\w.$])AT\s*\(\s*(?P<arg>[^()]*(?:\([^()]*\)[^()]*)?)\)\s*;?\s*$",
                        re.I)


@dataclass(frozen=True)
class AtClause:
    """What a trailing ``AT(...)`` named: a timestamp, a snapshot version or a parameter."""

    timestamp: datetime | None = None
    snapshot_version: int | None = None
    parameter: str | None = None


@dataclass(frozen=True)
class CypherVerdict:
    """An accepted query: ``query`` is ready to EXPLAIN and run (no ``AT``, no final ``;``)."""

    query: str
    at: AtClause | None
    procedures: tuple[str, ...]
    functions: tuple[str, ...]


def _skip_quoted(text: str, i: int, quote: str) -> int:
    """Index just past the literal opening at ``i``; backslash escapes, doubled back-ticks."""
    escape, doubled = ("`", "``") if quote == "`" else ("\\", None)
    j = i + 1
    while j < len(text):
        if text[j] == escape and (doubled is None or text.startswith(doubled, j)):
            j += 2
        elif text[j] == quote:
            return j + 1
        else:
            j += 1
    raise BadRequest("unterminated quoted text in Cypher", detail={"offset": i})


def _comment_end(text: str, i: int) -> int:
    if text.startswith("//", i):
        nl = text.find("\n", i)
        return len(text) if nl < 0 else nl
    end = text.find("*/", i + 2)
    if end < 0:
        raise BadRequest("unterminated /* comment in Cypher", detail={"offset": i})
    return end + 2


def blank(query: str, quoted_name: Callable[[str, int, int], str]) -> str:
    """Same-length copy: comments blanked, string contents blanked (quotes kept), and each
    back-ticked name ``query[start:end]`` replaced by ``quoted_name(query, start, end)``."""
    out: list[str] = []
    i = 0
    while i < len(query):
        c = query[i]
        if query.startswith(("//", "/*"), i):
            end = _comment_end(query, i)
            out.append(" " * (end - i))
        elif c in "'\"`":
            end = _skip_quoted(query, i, c)
            out.append(quoted_name(query, i, end) if c == "`" else c + " " * (end - i - 2) + c)
        else:
            end = i + 1
            out.append(c)
        i = end
    return "".join(out)


def _unquote(query: str, start: int, end: int) -> str:
    return " " + query[start + 1: end - 1].replace("``", "  ") + " "


def mask(query: str) -> str:
    """Same-length copy for analysis: comments and string contents blanked, names un-quoted."""
    return blank(query, _unquote)


def _forbid(token: str, reason: str) -> Forbidden:
    return Forbidden(f"Cypher refused: {reason} `{token}`", detail={"token": token,
                                                                   "reason": reason})


def _single_statement(masked: str) -> int:
    """Length of the statement without trailing ``;``/blanks; refuses a second statement."""
    body = masked.rstrip()
    while body.endswith(";"):
        body = body[:-1].rstrip()
    if ";" in body:
        raise _forbid(";", "multiple statements")
    if not body.strip():
        raise BadRequest("empty Cypher query")
    return len(body)


def _check_keywords(text: str) -> None:
    if m := _DATABASE_COMMAND.search(text):
        raise _forbid(" ".join(m.group(0).split()).upper(), "administration command")
    for m in _WORD.finditer(text):
        word = m.group(0).upper()
        if word in DENIED_KEYWORDS:
            raise _forbid(word, DENIED_KEYWORDS[word])


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatchcase(name.lower(), p) for p in patterns)


def _check_routines(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    procedures = [m.group(1) for m in _CALL.finditer(text)]
    invoked = [m.group(1) for m in _INVOCATION.finditer(text)]
    for name in procedures + invoked:
        if _matches(name, DENIED_ROUTINES):
            raise _forbid(name, "write or administration procedure")
    for name in procedures:
        if not _matches(name, ALLOWED_PROCEDURES):
            raise _forbid(name, "procedure not on the read-only allow-list")
    functions = sorted({n for n in invoked if n not in procedures})
    return tuple(sorted(set(procedures))), tuple(functions)


def _parse_at(arg: str) -> AtClause:
    literal = re.fullmatch(r"(?:datetime\s*\(\s*)?(['\"])(.*)\1(?:\s*\))?", arg, re.I | re.S)
    if literal:
        try:
            stamp = datetime.fromisoformat(literal.group(2).strip())
        except ValueError as e:
            raise BadRequest("AT(...) timestamp is not ISO-8601", detail={"at": arg}) from e
        return AtClause(timestamp=stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC))
    if arg.isdigit():
        return AtClause(snapshot_version=int(arg))
    if re.fullmatch(r"\$[A-Za-z_]\w*", arg):
        return AtClause(parameter=arg[1:])
    raise BadRequest("AT(...) takes an ISO-8601 string, a snapshot version or a $parameter",
                     detail={"at": arg})


def split_at_suffix(query: str) -> tuple[str, AtClause | None]:
    """``MATCH (n) RETURN n AT('2026-10-01T00:00:00Z')`` -> the query without it, and the time."""
    m = _AT_SUFFIX.search(mask(query))
    if m is None:
        return query, None
    return query[: m.start()].rstrip(), _parse_at(query[m.start("arg"): m.end("arg")].strip())


def check_read_only(query: str) -> CypherVerdict:
    """Accept a read-only single statement (with an optional ``AT(...)``) or raise ``Forbidden``.

    Raises ``BadRequest`` for text that cannot be analysed (empty, unterminated literal).
    """
    stripped, at = split_at_suffix(query)
    masked = mask(stripped)
    length = _single_statement(masked)
    text = re.sub(r"\s*\.\s*", ".", masked[:length])
    _check_keywords(text)
    procedures, functions = _check_routines(text)
    return CypherVerdict(stripped[:length], at, procedures, functions)


def take_rows(rows: Iterable[T], limit: int) -> tuple[list[T], bool]:
    """At most ``limit`` rows, and whether more existed (reads ``limit + 1``, never all)."""
    if limit < 0:
        raise ValueError("limit must be >= 0")
    taken = list(islice(rows, limit + 1))
    return taken[:limit], len(taken) > limit
