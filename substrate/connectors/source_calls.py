"""Peers a service's own source code names: the addresses written in it and its Feign clients.

Many services take a peer's address from their code rather than from their deployment: a
default beside the variable that may override it (``env.str("POSTGREST_URL",
"http://api:3000")``, ``os.getenv("CART_URL", "http://cart:8080")``), a client's base URL
(``private static final String HOSTNAME = "http://customers-service/"``, ``baseURL:
"http://catalogue:80"``), or a Spring Cloud OpenFeign client, which names the registered
service it calls (``@FeignClient(name = "statistics-service")``).

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
# a quoted URL: its scheme, then the rest up to the closing quote
_URL = re.compile(r"""["'`]([A-Za-z][A-Za-z0-9+.-]{1,15}://[^\s"'`<>{}]+)["'`]""")
_FEIGN = re.compile(r"""@FeignClient\s*\(\s*(?:(?:name|value)\s*=\s*)?["']([\w.-]+)["']""")
_K8S_DNS = re.compile(r"^[a-z0-9-]+\.[a-z0-9-]+\.svc(?:\.cluster\.local)?$")
_VARIABLE = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")  # CART_URL, AWS_S3_ENDPOINT
_NOT_PEERS = frozenset({"localhost", "127.0.0.1", "0.0.0.0", "host.docker.internal"})
_SCHEMES_NOT_PEERS = frozenset({"file", "data", "javascript", "mailto", "jar", "classpath"})

SCAN_CACHE_BLOBS = 200_000
Peer = tuple[str, str, int, frozenset[str]]  # key, value, line, variables named beside it
_SCANNED: OrderedDict[str, tuple[Peer, ...]] = OrderedDict()


def is_source_path(path: str) -> bool:
    """A source file of a language whose code may name peers (tests and vendored code
    aside)."""
    folder, name = posixpath.split(path)
    if posixpath.splitext(name)[1].lower() not in SOURCE_EXTENSIONS or _TEST_FILE.search(name):
        return False
    return not any(part.lower() in _SKIP_DIRS for part in folder.split("/"))


def _peer_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return False
    if not host or parts.scheme.lower() in _SCHEMES_NOT_PEERS or host in _NOT_PEERS:
        return False
    return "." not in host or bool(_K8S_DNS.match(host))


def peers_in(text: str) -> list[Peer]:
    """``(key, value, line, variables)`` of each peer the text names: ``("url", URL, n,
    ...)`` for an address literal, ``("feign_service", NAME, n, ...)`` for a Feign client;
    ``variables``: the upper-case variable names on that line and the one before it."""
    if "://" not in text and "@FeignClient" not in text:
        return []
    lines = text.splitlines()
    found: list[Peer] = []

    def beside(number: int) -> frozenset[str]:
        return frozenset(_VARIABLE.findall(" ".join(lines[max(0, number - 2):number])))

    for number, line in enumerate(lines, 1):
        if "://" in line:
            found.extend(("url", url, number, beside(number)) for url in _URL.findall(line)
                         if _peer_url(url))
    if "@FeignClient" in text:
        for match in _FEIGN.finditer(text):
            number = text.count("\n", 0, match.start(1)) + 1
            found.append(("feign_service", match.group(1), number, frozenset()))
    return found


def may_name_peers(text: str) -> bool:
    """Does :func:`peers_in` find anything in ``text``? (The path filter's question.)"""
    return bool(peers_in(text))


def scan(snap: GitSnapshot, paths: list[str]) -> dict[str, tuple[Peer, ...]]:
    """:func:`peers_in` of each of ``paths`` at the snapshot (only those naming a peer),
    each blob read and scanned once per process."""
    todo = [snap.blobs[p] for p in paths if p in snap.blobs and snap.blobs[p] not in _SCANNED]
    if todo:
        for blob, text in read_blobs(snap.repo, list(dict.fromkeys(todo))).items():
            _SCANNED[blob] = tuple(peers_in(text))
        while len(_SCANNED) > SCAN_CACHE_BLOBS:
            _SCANNED.popitem(last=False)
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
    ways_a, ways_b = a.get("deployed_by") or (), b.get("deployed_by") or ()
    assert isinstance(ways_a, list | tuple) and isinstance(ways_b, list | tuple)
    return not ways_a or not ways_b or bool(set(ways_a) & set(ways_b))
