"""A Neo4j Browser guide (``:play``) that walks a newcomer through the saved queries.

Built from ``cypher/browser/*.cypher`` (one slide per saved script: its comment lines as the
text, its ``:param`` lines and its query as runnable blocks) with the Jinja template
``cypher/browser/guide.html.j2``, in the HTML slide format Browser's ``:play <url>`` shows.
The gateway serves it without credentials at ``GET /browser/guide`` (static text from this
repository, no graph data) with CORS for the Neo4j Browser's origin, so
``:play http://localhost:8080/browser/guide`` works (Neo4j allows guides from ``localhost``:
``browser.remote_content_hostname_whitelist``). ``substrate browser guide --out F`` writes
the file for any other host.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jinja2

from substrate.browser import BROWSER_DIR, LIVE, browser_scripts, parse_script
from substrate.settings import Settings

TEMPLATE = "guide.html.j2"


@dataclass(frozen=True)
class Slide:
    file: str
    title: str
    notes: list[str]
    params: str  # the script's :param lines
    query: str


def slide(path: Path) -> Slide:
    text = path.read_text()
    script = parse_script(text)
    notes = [line.lstrip("/ ").strip() for line in text.splitlines()[1:]
             if line.startswith("//")]
    params = "\n".join(f":param {k} => {v};" for k, v in script.params.items())
    return Slide(path.name, script.title, notes, params, script.query + ";")


def guide_html(url: str, root: Path = BROWSER_DIR) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(root)),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    scope = "\n".join([":param tenant => 'acme';", f":param snapshot => {LIVE};",
                       ":param clearance => ['public', 'internal'];"])
    return env.get_template(TEMPLATE).render(
        scripts=[slide(p) for p in browser_scripts(root)], scope=scope, live=LIVE, url=url)


def guide_url(settings: Settings) -> str:
    return f"http://localhost:{settings.gateway_port}/browser/guide"


def browser_origins(settings: Settings) -> frozenset[str]:
    """Where Neo4j Browser runs: the origins allowed to fetch the guide."""
    port = settings.neo4j_http_port
    return frozenset(f"http://{host}:{port}" for host in ("localhost", "127.0.0.1", "[::1]"))
