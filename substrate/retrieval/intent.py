"""Intent-mismatch detection (RSN-09, RSN-UC-03).

The cosine similarity between the embedding of a pull request's change summary (its
``summary`` property, else its ``title``) and the embedding of each project item it
``LINKS_TO`` (the item's ``description``, else its name). When the best-matching linked item
scores below the threshold (``INTENT_THRESHOLD``, 0.6) the PR is flagged with the spec's
advisory. A PR that links no item, or has no change summary, gets an explicit status instead
of a score; an unknown PR is a 404. With ``at=``/``snapshot_version`` the texts are the ones
the graph held at that snapshot.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from psycopg_pool import AsyncConnectionPool

from substrate.errors import BadRequest, NotFound
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.rerank import Vectors, cosines
from substrate.retrieval.scope import ReadScope
from substrate.retrieval.temporal import props_at
from substrate.settings import Settings

ADVISORY = ("The code changes in this PR appear semantically distant from the linked project "
            "item. Confirm that this PR addresses the correct work item.")
Embed = Callable[[list[str]], Awaitable[Vectors]]
PR_KEYS = ("number", "title", "summary", "author", "url", "merged_at", "state")
_PR_ID = re.compile(r"^(?:pr:|pr\s*#?|#)?\s*(\d{1,9})$", re.I)


def pr_ceid(value: Any) -> str:
    """``447``, ``"447"``, ``"#447"``, ``"PR #447"`` or ``"pr:447"`` -> ``pr:447``."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise BadRequest("pr must be a PR number or id such as 447 or 'pr:447'", {"pr": value})
    m = _PR_ID.match(str(value).strip())
    if not m:
        raise BadRequest("pr must be a PR number or id such as 447 or 'pr:447'", {"pr": value})
    return f"pr:{int(m.group(1))}"


async def _texts_at(settings: Settings, scope: ReadScope, row: dict[str, Any],
                    pool: AsyncConnectionPool[Any] | None = None) -> dict[str, Any]:
    """For a pinned read: the PR's and items' texts as of the snapshot (from the change log;
    Neo4j keeps only a node's latest properties)."""
    ids = [row["pr"]["ceid"]] + [i["item"]["ceid"] for i in row["items"]]
    history = await props_at(settings, scope.tenant, ids, scope.version, pool)
    pr_then = history.get(ids[0], ({}, []))[0]
    props = {**row["props"], **{k: pr_then[k] for k in PR_KEYS if k in pr_then}}
    items = []
    for item in row["items"]:
        then = history.get(item["item"]["ceid"], ({}, []))[0]
        items.append({**item, "description": then.get("description", item["description"])})
    return {**row, "props": props, "items": items}


def _item_text(item: dict[str, Any]) -> str:
    return str(item.get("description") or item["item"].get("name") or "")


def _base(row: dict[str, Any], scope: ReadScope, threshold: float) -> dict[str, Any]:
    props = row["props"]
    return {"pr": {**row["pr"], **props}, "threshold": threshold,
            "snapshot_version": scope.version, "pinned": scope.pinned, "flagged": False,
            "advisory": None}


async def check_intent(settings: Settings, reader: GraphReader, scope: ReadScope, pr: Any,
                       embed: Embed, threshold: float | None = None,
                       pool: AsyncConnectionPool[Any] | None = None) -> dict[str, Any]:
    threshold = settings.intent_threshold if threshold is None else threshold
    ceid = pr_ceid(pr)
    rows = await reader.plain_rows("retrieval/intent_pr", scope, ceid=ceid)
    if not rows:
        raise NotFound(f"no pull request {ceid} in tenant {scope.tenant!r} at snapshot "
                       f"{scope.version}", {"pr": ceid, "snapshot_version": scope.version})
    row = await _texts_at(settings, scope, rows[0], pool) if scope.pinned else rows[0]
    out = _base(row, scope, threshold)
    if not row["items"]:
        return {**out, "status": "no_linked_item", "linked_item": None, "items": [],
                "message": f"{ceid} links no project item: there is nothing to compare it "
                           "with, so no score was computed"}
    pr_text = str(row["props"].get("summary") or row["props"].get("title") or "")
    items = sorted(row["items"], key=lambda i: i["item"]["ceid"])
    if not pr_text:
        return {**out, "status": "no_change_summary", "linked_item": None,
                "items": [_item(i, None, threshold) for i in items],
                "message": f"{ceid} has no change summary or title to embed"}
    vectors = await embed([pr_text] + [_item_text(i) for i in items])
    scored = [_item(i, round(sim, 4), threshold)
              for i, sim in zip(items, cosines(vectors[0], vectors[1:]), strict=True)]
    best = max(scored, key=lambda s: (s["score"], s["item"]["ceid"]))
    flagged = best["score"] < threshold
    return {**out, "status": "flagged" if flagged else "ok", "flagged": flagged,
            "score": best["score"], "advisory": ADVISORY if flagged else None,
            "linked_item": best["item"], "items": scored,
            "compared": {"pr_text": pr_text, "item_text": best["text"]}}


def _item(item: dict[str, Any], score: float | None, threshold: float) -> dict[str, Any]:
    return {"item": {**item["item"], "key": item.get("key"), "kind": item.get("kind")},
            "text": _item_text(item), "score": score,
            "below_threshold": None if score is None else score < threshold,
            "hop": item["hop"]}


def intent_hops(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The LINKS_TO edges compared (evidence for the bundle)."""
    return [{**i["hop"], "hop": 1} for i in result.get("items", [])]
