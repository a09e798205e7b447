"""GET /browser/guide: the Neo4j Browser guide (``:play``), open like /openapi.json."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse

from substrate.browser_guide import browser_origins, guide_html, guide_url
from substrate.settings import Settings


async def browser_guide(request: Request) -> HTMLResponse:
    """The Neo4j Browser guide to the saved queries.
    ---
    summary: "Neo4j Browser guide: in Browser, :play http://localhost:8080/browser/guide"
    description: No credentials (static text, no graph data); CORS for Neo4j Browser's origin.
    responses:
      200: {description: the guide's HTML slides}
    """
    settings: Settings = request.app.state.services.settings
    headers = {"Cache-Control": "no-cache"}
    origin = request.headers.get("origin", "")
    if origin in browser_origins(settings):
        headers |= {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}
    return HTMLResponse(guide_html(guide_url(settings)), headers=headers)
