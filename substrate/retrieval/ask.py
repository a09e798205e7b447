"""``substrate ask "question"``: the /search answer, printed for a person.

When the gateway is up, the question goes to its ``POST /search`` (authenticated with
``SUBSTRATE_API_KEY`` or the local admin key that ``up`` writes); the process then loads
nothing heavy and answers in well under a second. When the gateway is not running (or with
``--local``), the same pipeline runs in-process, which loads the embedder and the drivers.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import httpx

from substrate.errors import SubstrateError, Unavailable
from substrate.settings import Settings

API_KEY_FILE = "admin_api_key"


def api_key(settings: Settings) -> str | None:
    """The key ``ask`` presents: ``SUBSTRATE_API_KEY``, else the local admin key file."""
    key = os.environ.get("SUBSTRATE_API_KEY", "").strip()
    if key:
        return key
    path = settings.secrets_dir / API_KEY_FILE
    return path.read_text().strip() if path.is_file() else None


def _ask_gateway(settings: Settings, question: str) -> dict[str, Any] | None:
    """The gateway's answer, or None when no gateway listens (connection refused)."""
    headers = {"Content-Type": "application/json", "X-Tenant": settings.tenant}
    key = api_key(settings)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    url = f"http://{settings.gateway_host}:{settings.gateway_port}/search"
    timeout = httpx.Timeout(120.0, connect=0.5)
    try:
        response = httpx.post(url, json={"query": question}, headers=headers, timeout=timeout)
    except httpx.ConnectError:
        return None
    except httpx.HTTPError as e:
        raise Unavailable(f"the gateway at {url} failed: {e}") from e
    if response.status_code >= 400:
        try:
            error = response.json()["error"]
            message = f"{error['code']}: {error['message']}"
        except (ValueError, KeyError, TypeError):
            message = response.text[:200]
        raise SubstrateError(f"the gateway refused the question ({response.status_code} "
                             f"{message})")
    result: dict[str, Any] = response.json()
    return result


async def _ask(settings: Settings, question: str) -> dict[str, Any]:
    from substrate.retrieval.context import SearchOptions
    from substrate.retrieval.service import ReadService
    from substrate.services import open_services

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


def ask_and_print(settings: Settings, question: str, as_json: bool = False,
                  local: bool = False) -> int:
    result = None if local else _ask_gateway(settings, question)
    if result is None:
        result = asyncio.run(_ask(settings, question))
    print(json.dumps(result, indent=2, default=str) if as_json else render(result))
    return 0
