"""Reading result rows of any shape: the entities they return and the edges (with evidence)
they carry — for hits, citations and the evidence bundle."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def _walk(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)


def _entity(d: dict[str, Any]) -> dict[str, Any] | None:
    """An entity map ({ceid, name, labels}) or a node (/cypher's typed JSON)."""
    props = d.get("properties") if d.get("type") == "node" else d
    if not isinstance(props, dict) or not isinstance(props.get("ceid"), str):
        return None
    labels = d.get("labels") or props.get("labels") or []
    label = props.get("label") or next((lb for lb in labels if lb != "Entity"), "")
    return {"ceid": props["ceid"], "name": props.get("name"), "label": label}


def entities(columns: list[str], rows: list[list[Any]]) -> list[dict[str, Any]]:
    """Returned entities in row order, each once; bare ``ceid`` columns count too."""
    seen: dict[str, dict[str, Any]] = {}
    for row in rows:
        record = dict(zip(columns, row, strict=False))
        if isinstance(record.get("ceid"), str):
            seen.setdefault(record["ceid"], {"ceid": record["ceid"], "name": record.get("name"),
                                             "label": record.get("label", "")})
        for ceid in record.get("members") or ():
            if isinstance(ceid, str):
                seen.setdefault(ceid, {"ceid": ceid, "name": None, "label": ""})
        for col in ("entity", *columns):
            for d in _walk(record.get(col)):
                if d.get("type") == "relationship" or "evidence_ref" in d:
                    continue
                e = _entity(d)
                if e is not None:
                    seen.setdefault(e["ceid"], e)
    return list(seen.values())


def evidence(columns: list[str], rows: list[list[Any]]) -> list[dict[str, Any]]:
    """Edges with their evidence: the translator's ``evidence`` maps and any relationship."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        for d in _walk(row):
            if "evidence_ref" in d and d.get("from") and d.get("to"):
                hop = {k: d.get(k) for k in ("from", "type", "to", "evidence_ref")}
                hop.update(source=d.get("source") or "", confidence=d.get("confidence") or 1.0)
            elif d.get("type") == "relationship":
                p = d.get("properties") or {}
                if not p.get("evidence_ref"):
                    continue
                hop = {"from": d.get("start"), "type": d.get("rel_type"), "to": d.get("end"),
                       "evidence_ref": p.get("evidence_ref"), "source": p.get("source") or "",
                       "confidence": p.get("confidence") or 1.0}
            else:
                continue
            found.setdefault((str(hop["from"]), str(hop["type"]), str(hop["to"])), hop)
    return list(found.values())
