"""``substrate ask "question"``: the /search pipeline in-process, printed for a person."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from substrate.retrieval.context import SearchOptions
from substrate.retrieval.service import ReadService
from substrate.services import open_services
from substrate.settings import Settings


async def _ask(settings: Settings, question: str) -> dict[str, Any]:
    services = open_services(settings, check_templates=False)
    try:
        read = ReadService(services)
        scope = await read.scope(settings.tenant)
        return await read.search(question, scope, SearchOptions())
    finally:
        await services.aclose()


def render(result: dict[str, Any]) -> str:
    lines = [f"Q: {result['query']}", f"route: {result['route']['why']}", "",
             result["answer"], ""]
    if result["citations"]:
        lines.append("evidence:")
        lines += [f"  [{c['n']}] {c['from']} -{c['edge']}-> {c['to']}   {c['evidence_ref']}"
                  for c in result["citations"]]
    conf = result["confidence"]
    lines += ["", f"confidence {conf['confidence']}  source_density {conf['source_density']}"
              f"  strategies {', '.join(conf['retrieval_strategies_used'])}"
              + ("  LOW-CONFIDENCE WARNING" if conf["low_confidence_warning"] else ""),
              f"snapshot {result['snapshot_version']}  "
              f"truncated {result['evidence_bundle']['truncated']}  "
              f"degraded {result['degraded'] or 'none'}  {result['timing_ms']} ms"]
    return "\n".join(lines)


def ask_and_print(settings: Settings, question: str, as_json: bool = False) -> int:
    result = asyncio.run(_ask(settings, question))
    print(json.dumps(result, indent=2, default=str) if as_json else render(result))
    return 0
