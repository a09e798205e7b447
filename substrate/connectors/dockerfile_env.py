"""Addresses a service's own Dockerfile sets as the defaults of its environment, the ports it
exposes, and the configuration files it copies into its image.

A service image often carries its peers' names as ``ENV`` defaults (an nginx front end's
``ENV CATALOGUE_HOST=catalogue USER_HOST=user ...`` that its proxy configuration reads), and
the deployment sets only what differs. The Dockerfile at the root of the service's source
folder is read with ``dockerfile-parse``; the ``ENV`` instructions of its final stage give
``(variable, value)`` with the line of each variable (an instruction may continue over several
lines). A variable the deployment also sets (the entity's ``env``) is left to the deployment:
that value is the one the service runs with. The manifest reader treats the rest like
environment variables (``via: dockerfile``).

The final stage's ``EXPOSE`` ports are the service's own ports when no deployment states any
(``EXPOSE 8080``: what the service listens on).

A configuration file of the service's folder that the final stage copies into the image
(``COPY nginx.conf /etc/nginx/conf.d/default.conf`` with its ``proxy_pass http://api:8000;``)
is read like a file a Compose service mounts (:func:`substrate.connectors.mounts.config_values`,
``via: image_config``).
"""

from __future__ import annotations

import io
import json
import posixpath
import re
import shlex
from functools import lru_cache
from typing import Any

from dockerfile_parse import DockerfileParser
from dockerfile_parse.util import extract_key_values

from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.mounts import is_config_file
from substrate.connectors.yamlnodes import Fact


def is_dockerfile_path(path: str) -> bool:
    """A Dockerfile whose ``ENV`` may name peers (for the replay's path filter)."""
    return posixpath.basename(path) == "Dockerfile"


def dockerfile_path(folder: str) -> str:
    return posixpath.join(folder.strip("/"), "Dockerfile") if folder.strip("/") else "Dockerfile"


MAX_COPIED = 20  # configuration files read per image


@lru_cache(maxsize=4096)
def _final_stage(text: str) -> tuple[dict[str, Any], ...]:
    """The instructions of the last stage (memoised: a history replay reads the same
    Dockerfile at every commit; callers only read them)."""
    structure: list[dict[str, Any]] = DockerfileParser(fileobj=io.BytesIO(text.encode())).structure
    starts = [i for i, s in enumerate(structure) if s["instruction"] == "FROM"]
    return tuple(structure[starts[-1] if starts else 0:])


def copied_sources(text: str) -> list[str]:
    """The sources (relative to the build context) the final stage copies from the context:
    ``COPY``/``ADD`` without ``--from`` (a file of another stage or image), shell or JSON form."""
    out: list[str] = []
    for step in _final_stage(text):
        if step["instruction"] not in ("COPY", "ADD"):
            continue
        value = str(step["value"]).strip()
        try:
            args = json.loads(value) if value.startswith("[") else shlex.split(value)
        except ValueError:
            continue
        flags = [a for a in args if str(a).startswith("--")]
        if any(str(f).startswith("--from") for f in flags):
            continue
        paths = [str(a) for a in args if not str(a).startswith("--")]
        out.extend(p for p in paths[:-1] if "://" not in p)
    return out


def env_defaults(text: str, path: str) -> list[tuple[str, Fact]]:
    """``(variable, Fact)`` of every ``ENV`` of the final stage of the Dockerfile ``text``."""
    lines = text.splitlines()
    out: list[tuple[str, Fact]] = []
    for step in _final_stage(text):
        if step["instruction"] != "ENV":
            continue
        try:
            pairs = extract_key_values(env_replace=False, args={}, envs={},
                                       instruction_value=step["value"])
        except ValueError:  # an unbalanced quote: not an instruction docker would build
            continue
        for key, value in pairs:
            out.append((key, Fact(value, path, _line_of(key, lines, step["startline"],
                                                         step["endline"]))))
    return out


_PORT = re.compile(r"^(\d{1,5})(?:/(?:tcp|udp))?$", re.I)


def exposed_ports(text: str, path: str) -> list[Fact]:
    """The ports the final stage ``EXPOSE``s ("EXPOSE 8080", "EXPOSE 80/tcp 443"), each at
    its instruction's first line; a variable (``EXPOSE $PORT``) is none."""
    out: list[Fact] = []
    for step in _final_stage(text):
        if step["instruction"] != "EXPOSE":
            continue
        for word in str(step["value"]).split():
            found = _PORT.match(word)
            if found:
                out.append(Fact(found.group(1), path, step["startline"] + 1))
    return out


def dockerfile_ports(snap: GitSnapshot, folder: str) -> list[Fact]:
    """The ports the service's own Dockerfile (``folder``: its source) exposes."""
    path = dockerfile_path(folder)
    return exposed_ports(snap.read(path), path) if snap.exists(path) else []


def _line_of(key: str, lines: list[str], start: int, end: int) -> int:
    """The 1-based line of ``key`` within the instruction's lines (0-based ``start..end``)."""
    rx = re.compile(rf"(?:^|\s){re.escape(key)}(?:=|\s)")
    for n in range(start, min(end, len(lines) - 1) + 1):
        if rx.search(lines[n]):
            return n + 1
    return start + 1


def dockerfile_values(snap: GitSnapshot, folder: str,
                      deployed: frozenset[str]) -> list[tuple[str, Fact]]:
    """The ``ENV`` defaults of the service whose source is ``folder``, but those its
    deployment sets (``deployed``: variable names)."""
    path = dockerfile_path(folder)
    if not snap.exists(path):
        return []
    return [(k, f) for k, f in env_defaults(snap.read(path), path) if k not in deployed]


def copied_configs(snap: GitSnapshot, folder: str) -> list[str]:
    """The configuration files of ``folder`` (the build context) its Dockerfile copies into
    the image by name (a copied folder, ``COPY . .``, is source code, not read)."""
    path = dockerfile_path(folder)
    if not snap.exists(path):
        return []
    base = folder.strip("/")
    found = (posixpath.normpath(posixpath.join(base, s)) for s in copied_sources(snap.read(path)))
    return [p for p in dict.fromkeys(found)
            if is_config_file(p) and snap.exists(p)][:MAX_COPIED]
