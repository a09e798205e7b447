"""The direct endpoints' logic: resolve a service, dependencies, ownership (RSN-10)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from substrate.errors import BadRequest, NotFound
from substrate.graph.records import slug
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.mentions import escape_lucene
from substrate.retrieval.scope import ReadScope

DEPENDENCY_TYPES = ("CALLS", "DEPENDS_ON", "IMPORTS", "HOSTS")
MAX_RESULTS = 200


@dataclass(frozen=True)
class DependencyQuery:
    depth: int = 1
    direction: str = "out"  # out: what it depends on; in: what depends on it
    types: tuple[str, ...] = ("CALLS", "DEPENDS_ON")
    min_weight: float = 0.0
    include_inferred: bool = False
    limit: int = 100

    def validate(self) -> DependencyQuery:
        if not 1 <= self.depth <= 3:
            raise BadRequest("depth must be between 1 and 3", {"depth": self.depth})
        if self.direction not in ("out", "in"):
            raise BadRequest("direction must be 'out' or 'in'", {"direction": self.direction})
        bad = [t for t in self.types if t not in DEPENDENCY_TYPES]
        if bad or not self.types:
            raise BadRequest("unknown relation types", {"bad": bad, "allowed": DEPENDENCY_TYPES})
        if not 0.0 <= self.min_weight <= 1_000_000:
            raise BadRequest("min_weight must be >= 0", {"min_weight": self.min_weight})
        if not 1 <= self.limit <= MAX_RESULTS:
            raise BadRequest(f"limit must be 1..{MAX_RESULTS}", {"limit": self.limit})
        return self


def split_id(value: str, prefix: str) -> tuple[str, str]:
    """``service:checkout`` or ``checkout`` -> (canonical id guess, plain name)."""
    value = value.strip()
    if not value or len(value) > 200:
        raise BadRequest("an id must be 1..200 characters", {"id": value[:50]})
    if ":" in value:
        kind, _, name = value.partition(":")
        if kind != prefix:
            raise BadRequest(f"expected a {prefix}: id", {"id": value})
        return value, name
    return f"{prefix}:{slug(value)}", value


def not_found(value: str, label: str, scope: ReadScope) -> NotFound:
    return NotFound(f"no {label} {value!r} in tenant {scope.tenant!r} at snapshot "
                    f"{scope.version}", {"id": value, "snapshot_version": scope.version})


def name_phrase(name: str) -> str | None:
    """A Lucene query for the entities whose name or an alias has the words of ``name`` in
    order (a superset of those whose name is ``name`` in any case); None: no words."""
    if not re.search(r"[^\W_]", name):
        return None
    phrase = escape_lucene(name)
    return f'name:"{phrase}" OR alias_text:"{phrase}"'


async def resolve(reader: GraphReader, scope: ReadScope, value: str,
                  label: str = "Service", prefix: str = "service") -> dict[str, Any]:
    ceid, name = split_id(value, prefix)
    rows = await reader.rows("retrieval/resolve_entity", scope, {"label": label},
                             ceid=ceid, name=name, lucene=name_phrase(name))
    if not rows:
        raise not_found(value, label, scope)
    return dict(rows[0]["entity"])


async def resolved_with(reader: GraphReader, scope: ReadScope, template: str, value: str,
                        ctx: dict[str, Any] | None = None, *, label: str = "Service",
                        prefix: str = "service", **params: Any,
                        ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One round trip of a ``retrieval/direct_*`` template: the entity of ``label`` named by
    ``value`` (canonical id, name or alias) and the template's rows about it."""
    ceid, name = split_id(value, prefix)
    found = await reader.plain_rows(template, scope, {"label": label, **(ctx or {})},
                                    ceid=ceid, name=name, **params)  # maps and values only
    if not found:
        raise not_found(value, label, scope)
    return dict(found[0]["entity"]), list(found[0]["rows"])


async def dependencies_of(reader: GraphReader, scope: ReadScope, value: str,
                          q: DependencyQuery) -> tuple[dict[str, Any], list[dict[str, Any]], bool]:
    """/dependencies/{id} in one round trip: (service, rows, whether the limit cut them)."""
    ctx = {"types": list(q.types), "depth": q.depth, "direction": q.direction}
    service, rows = await resolved_with(
        reader, scope, "retrieval/direct_dependencies", value, ctx, min_weight=q.min_weight,
        include_inferred=q.include_inferred, limit=q.limit + 1)
    return service, rows[: q.limit], len(rows) > q.limit


async def dependencies(reader: GraphReader, scope: ReadScope, service: dict[str, Any],
                       q: DependencyQuery) -> tuple[list[dict[str, Any]], bool]:
    """Rows (target, depth, hops) and whether the limit cut the result."""
    ctx = {"types": list(q.types), "depth": q.depth, "direction": q.direction}
    rows = await reader.rows(
        "retrieval/dependencies", scope, ctx, ceid=service["ceid"], min_weight=q.min_weight,
        include_inferred=q.include_inferred, limit=q.limit + 1,
    )
    return rows[: q.limit], len(rows) > q.limit


def merge_owners(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Group owners by where the claim comes from; disagreement is reported, not resolved."""
    owners: dict[str, dict[str, Any]] = {}
    for row in rows:
        o = owners.setdefault(row["owner"]["ceid"], {**row["owner"], "claims": []})
        o["claims"].append({"primary": row["primary"], **row["hop"]})
    codeowners = {c for c, o in owners.items()
                  if any(str(h["source"]).startswith("git:") for h in o["claims"])}
    declared = {c for c, o in owners.items()
                if any(not str(h["source"]).startswith("git:") for h in o["claims"])}
    note = None
    if codeowners and declared and not declared <= codeowners:
        note = ("OWNS edges and CODEOWNERS disagree: CODEOWNERS names "
                f"{sorted(codeowners)}, other sources name {sorted(declared)}")
    primary = [c for o in owners.values() for c in o["claims"] if c["primary"]]
    conflicts = primary if len({c["from"] for c in primary}) > 1 else []
    return {
        "owners": sorted(owners.values(), key=lambda o: (not _is_primary(o), o["ceid"])),
        "codeowners": sorted(codeowners), "declared": sorted(declared),
        "agree": note is None, "note": note, "conflicts": conflicts,
    }


def _is_primary(owner: dict[str, Any]) -> bool:
    return any(c["primary"] for c in owner["claims"])
