"""Routes whose input is validated here but whose behaviour lives in later modules."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.errors import json_body
from substrate.errors import BadRequest, NotImplementedYet


async def intent_check(request: Request) -> JSONResponse:
    body = await json_body(request)
    pr = body.get("pr")
    if not isinstance(pr, int | str) or isinstance(pr, bool) or str(pr).strip() == "":
        raise BadRequest("pr must be a PR number or id", {"pr": pr})
    raise NotImplementedYet("intent-check is not implemented yet", {"pr": pr})


async def temporal(request: Request) -> JSONResponse:
    if not any(k in request.query_params for k in ("at", "from", "to")):
        raise BadRequest("give at=... or from=...&to=...")
    raise NotImplementedYet("temporal is not implemented yet")
