"""Peers a service's own source code names: the addresses written in it and its Feign clients.

Many services take a peer's address from their code rather than from their deployment: a
default beside the variable that may override it (``env.str("POSTGREST_URL",
"http://api:3000")``, ``os.getenv("CART_URL", "http://cart:8080")``), a client's base URL
(``private static final String HOSTNAME = "http://customers-service/"``, ``baseURL:
"http://catalogue:80"``), a host given by keyword in a client's settings (``new
RedisStore({host: "session-db"})``, ``Addr: "redis-cart:6379"``), or a Spring Cloud OpenFeign
client, which names the registered service it calls (``@FeignClient(name =
"statistics-service")``). An address variable's default read beside an environment lookup
counts as well when it is a bare host (``process.env.CATALOGUE_HOST || 'catalogue'``,
``os.getenv('USER_HOST', 'user')``, Spring's ``${CART_HOST:cart}``). A URL is cut at its first
format placeholder (``util.format("http://catalogue%s", domain)``, ``"http://customers-service
/owners/{ownerId}"``); one whose host is a placeholder (``"http://%s/shipping/"``, an
f-string's ``{host}``) names nothing. Comment lines are skipped.

A literal counts when it is an address inside a cluster or a Compose network: a URL whose host
has no dot (``http://cart:8080``, ``redis://session-cache``) or is a Kubernetes DNS name
(``http://ledger.bank.svc.cluster.local``); ``localhost``, ``example.com`` and every other
internet name do not. The manifest reader then resolves the host like an environment
variable's (:func:`substrate.connectors.endpoints.hosts_in`): a known service gives CALLS, a
known store DEPENDS_ON, anything else nothing. Tests, fixtures and vendored code are not read.

A default is what the code uses when its deployment does not say otherwise, so it counts only
where it applies (:func:`substrate.connectors.manifests.app_config_batch`): not when the
deployment sets the variable named beside it (``AWS_S3_PRIVATE_ENDPOINT`` on the line or the
one before), and only towards a peer deployed the same way (Compose, Kubernetes, Cloud
Foundry, ...): the same code deployed to Cloud Foundry does not call the S3 emulator its
Compose file runs for local development.

The edges are a little less confident than a deployment's own (:data:`CONFIDENCE`): where the
Compose file or the manifest says the same, its line stays the edge's evidence and this one is
added to ``evidence_refs``.

Each file is scanned once per blob (:func:`scan`): a history replay reads again only the
files a commit changed, and :func:`may_name_peers` tells the replay's path filter whether a
file's text holds anything this reader takes (a commit whose changed source files hold none,
before or after, changes nothing here).
"""

from __future__ import annotations

import posixpath
import re
from collections import OrderedDict
from collections.abc import Iterator
from functools import lru_cache
from urllib.parse import urlsplit

from substrate.connectors.gitcmd import read_blobs
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.yamlnodes import Fact

VIA = "source_code"  # the edges' ``via``
CONFIDENCE = 0.93  # under a deployment's (0.95), over the verification threshold (0.92)
SOURCE_EXTENSIONS = frozenset({
    ".java", ".kt", ".kts", ".scala", ".groovy", ".go", ".py", ".rb", ".php", ".cs", ".fs",
    ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".rs", ".ex", ".exs", ".swift", ".dart",
})
_SKIP_DIRS = frozenset({
    "test", "tests", "testing", "__tests__", "__mocks__", "spec", "specs", "e2e", "it",
    "integration-tests", "integration_tests", "testdata", "fixtures", "mocks", "node_modules",
    "vendor", "third_party", "dist", "build", "target", "out", ".github", "docs", "doc",
    "examples", "example", "samples", "migrations",
})
_TEST_FILE = re.compile(r"(?:^test_|_test\.|\.test\.|\.spec\.|Tests?\.(?:java|kt|cs|scala)$"
                        r"|_spec\.rb$|conftest\.py$)")
# a quoted URL: its scheme (``jdbc:mysql`` too), then the rest up to the closing quote
_URL = re.compile(r"""["'`]((?:jdbc:)?[A-Za-z][A-Za-z0-9+.-]{1,15}://[^\s"'`<>]+)["'`]""")
# where a URL stops naming its host: a format placeholder (``%s``, ``{id}``, ``${host}``)
_PLACEHOLDER = re.compile(r"[{%$]")
# an address variable's default beside it: ``process.env.CATALOGUE_HOST || 'catalogue'``,
# ``os.getenv('USER_HOST', 'user')``, ``getenv("CART_ENDPOINT", "cart")``,
# ``getEnv("PRODUCT_CATALOG_SERVICE_ADDR", "productcatalogservice:3550")``
_ADDRESS_NAME = (r"[A-Z][A-Z0-9_]*(?:HOST|HOSTNAME|HOSTS|ADDR|ADDRESS|URL|URI|ENDPOINT|SERVER"
                 r"|SERVICE|BROKER|BROKERS)")
# where code reads its environment: os.getenv, os.environ, process.env, os.Getenv,
# System.getenv, Environment.GetEnvironmentVariable, ENV["X"], env("X", ...), ${X:default}
# (its first character a class of its own: Python's re then skips the text ~5x faster)
_ENV_LOOKUP = re.compile(r"[gGLepE$](?:etenv|etEnv|ookupEnv|nviron|rocess\.env"
                         r"|etEnvironmentVariable|NV\[|NV\.fetch|nv\(|nv\.|nv::var|\{)")
_ADDRESS_WORDS = ("HOST", "ADDR", "URL", "URI", "ENDPOINT", "SERVER", "SERVICE", "BROKER")
# (``ENV['X'] || 'x'``, ``process.env["X"] ?? "x"``, Rust's ``env::var("X").unwrap_or("x")``)
_ENV_DEFAULT = re.compile(r"\b(" + _ADDRESS_NAME + r""")\b["']?\s*[\])]?\s*"""
                          r"""(?:,|\|\||\?:|\?\?|\bor\b|\.unwrap_or(?:_else)?\(\s*(?:\|_\|)?)"""
                          r"""\s*["']([^"'\s]+)["']""")
# a command-line flag's default: Go's ``flag.String("cart-addr", "cart:7070", ...)``,
# Python's ``add_argument("--cart-addr", default="cart:7070")``; the flag's name must say
# it is an address (:data:`_FLAG_ADDRESS`)
_FLAG_DEFAULT = re.compile(r"""[fa](?:lag\.String(?:Var)?\(\s*(?:&[\w.]+\s*,\s*)?"([\w.-]+)"\s*,"""
                           r"""\s*"([^"\s]+)"|dd_argument\(\s*["']--([\w-]+)["'][^)\n]*?"""
                           r"""\bdefault\s*=\s*["']([^"'\s]+)["'])""")
_FLAG_ADDRESS = re.compile(r"(?:^|[-_.])(?:host|hostname|addr|address|url|uri|endpoint|server"
                           r"|broker|brokers)$", re.IGNORECASE)
# a host given by keyword in a client's settings: ``new RedisStore({host: "session-db"})``,
# ``redis.Redis(host="redis")``, ``Addr: "redis-cart:6379"``, ``bootstrap_servers="kafka:9092"``
# (first character a class, no look-behind: Python's re skips the text ~7x faster; a key that
# ends a longer name, ``myhost:``, is left out by :func:`_matches`)
_HOST_KEYWORD = re.compile(r"""([hHaAbB](?:ost(?:name)?|ddr(?:ess)?|rokers|ootstrap_servers"""
                           r"""|ootstrapServers|ootstrap\.servers))["']?\s*[:=]\s*\[?\s*"""
                           r"""["']([^"'\s]+)["']""")
# a gRPC channel's target given as a literal: Go's ``grpc.Dial("checkout:5050", ...)``,
# ``grpc.DialContext(ctx, ...)``, ``grpc.NewClient``; Python's
# ``grpc.insecure_channel("recommendation:8080")``; Java's ``ManagedChannelBuilder
# .forTarget("cart:7070")`` / ``forAddress("cart", 7070)``; a Node client's constructor
# ``new CartService("cart:7070", grpc.credentials.createInsecure())``; groups: the call's
# name (None for a Node client), the target
_DIAL_WORDS = ("Dial", "NewClient", "_channel", "forTarget", "forAddress", "credentials")
_DIAL = re.compile(r"""(?:\b(Dial|DialContext|NewClient|insecure_channel|secure_channel"""
                   r"""|forTarget|forAddress)\s*\(\s*(?:\w+\s*,\s*)?|\(\s*(?=["'][^"'\s]+["']"""
                   r"""\s*,\s*grpc\.credentials\b))["'](?:dns:///)?([^"'\s/]+)["']""")
# Spring's ``@Value("${CART_HOST:cart}")``
_PLACEHOLDER_DEFAULT = re.compile(r"\$\{(" + _ADDRESS_NAME + r"):([^}\s]+)\}")
_FEIGN = re.compile(r"@FeignClient\s*\(([^)]*)\)")
_FEIGN_NAME = re.compile(r"""(?:\b(?:name|value)\s*=\s*|^\s*)["']([\w.-]+)["']""")
_COMMENT = ("//", "#", "*", "/*", "--", "<!--")
# a block comment that opens a line (``/*`` after indentation only: a ``"*/*"`` inside a
# string does not open one), to its ``*/``
_BLOCK_OPEN = re.compile(r"^[ \t]*/\*", re.MULTILINE)
_K8S_DNS = re.compile(r"^[a-z0-9-]+\.[a-z0-9-]+\.svc(?:\.cluster\.local)?$")
_VARIABLE = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")  # CART_URL, AWS_S3_ENDPOINT
_NOT_PEERS = frozenset({"localhost", "127.0.0.1", "0.0.0.0", "host.docker.internal"})
_SCHEMES_NOT_PEERS = frozenset({"file", "data", "javascript", "mailto", "jar", "classpath",
                                "php", "about", "blob", "chrome"})

SCAN_CACHE_BLOBS = 200_000
WINDOW = 400  # characters of a line read either side of a match
Peer = tuple[str, str, int, frozenset[str]]  # key, value, line, variables named beside it
_SCANNED: OrderedDict[str, tuple[Peer, ...]] = OrderedDict()


@lru_cache(maxsize=1 << 18)  # asked of every file of every parsed commit
def is_source_path(path: str) -> bool:
    """A source file of a language whose code may name peers (tests and vendored code
    aside). Below a JVM source root (``src/main/``) the folders are a package's name
    (``org/springframework/samples/...``, ``com/example/...``): only the folders above it
    are judged."""
    folder, name = posixpath.split(path)
    if posixpath.splitext(name)[1].lower() not in SOURCE_EXTENSIONS or _TEST_FILE.search(name):
        return False
    parts = folder.split("/")
    for i in range(len(parts) - 1):
        if parts[i] == "src" and parts[i + 1] == "main":
            parts = parts[:i]
            break
    return not any(part.lower() in _SKIP_DIRS for part in parts)


def _peer_url(literal: str) -> str | None:
    """The URL a literal names a peer by, cut at its first format placeholder
    (``http://catalogue%s`` -> ``http://catalogue``); None when its host is a placeholder, not
    inside a network, or the scheme names no peer."""
    scheme, _, rest = literal.partition("://")
    cut = _PLACEHOLDER.search(rest)
    url = f"{scheme}://{rest[:cut.start()] if cut else rest}"
    try:
        parts = urlsplit(url.removeprefix("jdbc:"))
        host = parts.hostname
    except ValueError:
        return None
    if not host or parts.scheme.lower() in _SCHEMES_NOT_PEERS or host in _NOT_PEERS:
        return None
    return url if "." not in host or _K8S_DNS.match(host) else None


def _peer_host(default: str) -> bool:
    """Is a variable's default a host (``cart``, ``productcatalogservice:3550``) inside a
    network? (A URL is read as one, above.)"""
    if "://" in default or _PLACEHOLDER.search(default) or default.isupper():
        return False  # a URL, a template, another variable's name ('CART_HOST', 'USER_HOST')
    host = default.rsplit(":", 1)[0].lower() if default.count(":") == 1 else default.lower()
    return bool(host) and host not in _NOT_PEERS and ("." not in host
                                                      or bool(_K8S_DNS.match(host)))


def peers_in(text: str) -> list[Peer]:
    """``(key, value, line, variables)`` of each peer the text names, comment lines aside:
    ``("url", URL, n, ...)`` for an address literal, ``(VARIABLE, DEFAULT, n, ...)`` for an
    address variable's default (``os.getenv("USER_HOST", "user")``), ``(KEYWORD, HOST, n,
    ...)`` for a host given by keyword (``{host: "session-db"}``), ``("ADDR", TARGET, n,
    ...)`` for a gRPC channel's literal target, ``("feign_service",
    NAME, n, ...)`` for a Feign client; ``variables``: the upper-case variable names on that
    line and the one before it. Matched over the whole text, lines counted only where a
    match is (a history replay scans every changed source file)."""
    found: list[Peer] = []
    if "://" in text:
        for (number, beside), literal in _matches(text, _URL):
            url = _peer_url(literal[0])
            if url is not None:
                found.append(("url", url, number, beside))
    if any(word in text for word in _ADDRESS_WORDS):
        regions = _lookups(text)
        for pattern in (_ENV_DEFAULT, _PLACEHOLDER_DEFAULT):
            for (number, _), (variable, default) in _matches(text, pattern, regions):
                if _peer_host(default):
                    found.append((variable, default, number, frozenset({variable})))
    for (number, beside), (key, value) in _matches(text, _HOST_KEYWORD, whole_words=True):
        if _peer_host(value):
            found.append((key.upper(), value, number, beside))
    if "flag.String" in text or "add_argument" in text:
        for (number, beside), groups in _matches(text, _FLAG_DEFAULT):
            name, default = (groups[0], groups[1]) if groups[0] else (groups[2], groups[3])
            if _FLAG_ADDRESS.search(name) and _peer_host(default):
                key = re.sub(r"[-.]", "_", name).upper()
                found.append((key, default, number, beside | {key}))
    if any(word in text for word in _DIAL_WORDS):
        for (number, beside), (dialled, target) in _matches(text, _DIAL):
            # a target is host:port (``net.Dial("tcp", ...)`` names a network first)
            if (":" in target or dialled == "forAddress") and _peer_host(target):
                found.append(("ADDR", target, number, beside))
    if "@FeignClient" in text:
        for call in _FEIGN.finditer(text):
            named = _FEIGN_NAME.search(call.group(1))
            if named is not None:
                at = call.start(1) + named.start(1)
                found.append(("feign_service", named.group(1), text.count("\n", 0, at) + 1,
                              frozenset()))
    if found and "/*" in text:
        inside = _block_comment_lines(text)
        found = [peer for peer in found if peer[2] not in inside]
    return sorted(found, key=lambda peer: peer[2])


def _block_comment_lines(text: str) -> set[int]:
    """The line numbers inside the block comments that open a line (commented-out code),
    from the opening line to the closing one (that one when nothing follows the ``*/``)."""
    lines: set[int] = set()
    end, line = 0, 1  # the line number at ``end``
    for opened in _BLOCK_OPEN.finditer(text):
        if opened.start() < end:
            continue  # inside the block before
        first = line + text.count("\n", end, opened.start())
        close = text.find("*/", opened.end())
        end = len(text) if close < 0 else close + 2
        line = first + text.count("\n", opened.start(), end)
        code_after = close >= 0 and bool(text[end:_line_end(text, end)].strip())
        lines.update(range(first, line + (0 if code_after else 1)))
    return lines


def _line_start(text: str, at: int) -> int:
    """Where the line holding ``at`` starts, looked for at most :data:`WINDOW` characters
    back (a minified file is one long line: an unbounded search per match is quadratic)."""
    low = max(0, at - WINDOW)
    found = text.rfind("\n", low, at)
    return found + 1 if found >= 0 else low


def _line_end(text: str, at: int) -> int:
    found = text.find("\n", at, at + WINDOW)
    return found if found >= 0 else min(len(text), at + WINDOW)


def _lookups(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the lines where the environment is read (the line of each lookup
    and the one after it, for a call written over two lines), in order, merged."""
    regions: list[tuple[int, int]] = []
    for lookup in _ENV_LOOKUP.finditer(text):
        start = _line_start(text, lookup.start())
        end = _line_end(text, _line_end(text, lookup.end()) + 1)
        if regions and start <= regions[-1][1]:
            regions[-1] = (regions[-1][0], max(end, regions[-1][1]))
        else:
            regions.append((start, end))
    return regions


def _matches(text: str, pattern: re.Pattern[str], regions: list[tuple[int, int]] | None = None,
             whole_words: bool = False,
             ) -> Iterator[tuple[tuple[int, frozenset[str]], tuple[str, ...]]]:
    """``((line number, upper-case variables on it and the line before), groups)`` of each
    match of ``pattern`` outside a comment line (within ``regions`` when given; with
    ``whole_words``, not one that starts inside a name or after a dot: ``cfg.host``). Lines
    are read at most :data:`WINDOW` characters either side of the match."""
    line, counted = 1, 0
    spans = [(0, len(text))] if regions is None else regions
    for match in (m for start, end in spans for m in pattern.finditer(text, start, end)):
        if whole_words and match.start() and (text[match.start() - 1].isalnum()
                                              or text[match.start() - 1] in "_.$"):
            continue
        line += text.count("\n", counted, match.start())
        counted = match.start()
        start = _line_start(text, match.start())
        if text[start:match.start()].lstrip().startswith(_COMMENT):
            continue
        before = _line_start(text, start - 1) if start else 0
        beside = frozenset(_VARIABLE.findall(text[before:_line_end(text, match.end())]))
        groups = match.groups()
        yield (line, beside), (groups if len(groups) > 1 else (groups[0],))


def may_name_peers(blob: str, text: str) -> bool:
    """Does :func:`peers_in` find anything in ``text`` (the blob ``blob``)? (The path
    filter's question; the answer's peers are kept for :func:`scan`.)"""
    return bool(_scanned(blob, text))


def _scanned(blob: str, text: str) -> tuple[Peer, ...]:
    found = _SCANNED.get(blob)
    if found is None:
        found = _SCANNED[blob] = tuple(peers_in(text))
        while len(_SCANNED) > SCAN_CACHE_BLOBS:
            _SCANNED.popitem(last=False)
    return found


def scan(snap: GitSnapshot, paths: list[str]) -> dict[str, tuple[Peer, ...]]:
    """:func:`peers_in` of each of ``paths`` at the snapshot (only those naming a peer),
    each blob read and scanned once per process."""
    todo = [snap.blobs[p] for p in paths if p in snap.blobs and snap.blobs[p] not in _SCANNED]
    if todo:
        for blob, text in read_blobs(snap.repo, list(dict.fromkeys(todo))).items():
            _scanned(blob, text)
    out = {}
    for path in paths:
        found = _SCANNED.get(snap.blobs.get(path, ""))
        if found:
            out[path] = found
    return out


def source_peers(snap: GitSnapshot, folder: str, candidates: list[str]
                 ) -> list[tuple[str, Fact, frozenset[str]]]:
    """``(key, value, variables beside it)`` of each peer named in the source files (among
    ``candidates``, the snapshot's :func:`is_source_path` files) under ``folder``, in path
    and line order."""
    prefix = "" if folder in ("", ".") else folder.rstrip("/") + "/"
    mine = [p for p in candidates if p.startswith(prefix)]
    return [(key, Fact(value, path, line), variables)
            for path, found in sorted(scan(snap, mine).items())
            for key, value, line, variables in found]


def same_platform(a: dict[str, object], b: dict[str, object]) -> bool:
    """Are two entities (their props) deployed the same way (``deployed_by``), or is one of
    them deployed by nothing the repository holds?"""
    ways_a, ways_b = _ways(a), _ways(b)
    return not ways_a or not ways_b or bool(ways_a & ways_b)


def _ways(props: dict[str, object]) -> set[str]:
    ways = props.get("deployed_by")
    return {str(w) for w in ways} if isinstance(ways, list | tuple) else set()
