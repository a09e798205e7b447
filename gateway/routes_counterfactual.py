"""POST /counterfactual: a past /search response, by bundle hash, analysed counterfactually.

Thin: the body is checked here; ``ReadService.counterfactual`` re-runs the question at the
response's snapshot with ``substrate.retrieval.counterfactual``.
"""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.errors import json_body
from gateway.params import scope_from, service
from gateway.policy import policy_json
from substrate.errors import BadRequest

BUNDLE_HASH = re.compile(r"^[0-9a-f]{16,128}$")


async def counterfactual(request: Request) -> JSONResponse:
    """Counterfactual analysis of a past answer.
    ---
    summary: Counterfactuals of a past /search response (CounterfactualEngine)
    description: >
      Body {"bundle_hash": str, "analysis"?: true | {budget, remove_edges, remove_nodes,
      redirect, shift_to}}. The question behind a /search response of this tenant (kept for a
      day) is re-run at that response's snapshot with the analysis: evidence removal,
      sensitivity ranking, minimum flipping change, relationship modifications, temporal
      shift and a robustness score. The same is available inline as
      options.counterfactual on /search.
    responses:
      200: {description: "counterfactual report, answer, confidence with robustness"}
      400: {description: bad input}
      404: {description: no recent response with this bundle hash in this tenant}
    """
    body = await json_body(request)
    unknown = set(body) - {"bundle_hash", "analysis"}
    if unknown:
        raise BadRequest("unknown fields", {"unknown": sorted(unknown)})
    bundle_hash = body.get("bundle_hash")
    if not isinstance(bundle_hash, str) or not BUNDLE_HASH.match(bundle_hash):
        raise BadRequest("bundle_hash must be the hex bundle_hash of a /search response")
    analysis = body.get("analysis", True)
    if analysis is False or analysis is None:
        raise BadRequest("analysis must be true or an object")
    scope = await scope_from(request)
    return policy_json(request, await service(request).counterfactual(bundle_hash, scope, analysis))
