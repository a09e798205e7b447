"""Configuration files a Compose service mounts from the repository, and the values in them.

A service often takes its peers' addresses from a file it mounts rather than from its
environment: an OpenTelemetry collector started with
``volumes: [./otel-collector-config.yml:/etc/otel.yml]`` exports to ``http://jaeger:4318``
written in that file; an nginx proxy has ``proxy_pass http://api:8000;`` in the
``nginx.conf`` it mounts. :func:`mounted_files` lists the bind mounts of one service whose
source is a file of the repository with a configuration suffix (:data:`CONFIG_SUFFIXES`);
:func:`config_values` reads every ``(key, value)`` of such a file with its line: each scalar of
a YAML document under its innermost key; ``key = value`` / ``key: value`` / ``key value;``
lines of the text formats, and any URL elsewhere on a line. The manifest reader treats them
like environment variables (a URL, or a bare host under an address-like key, names a host).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from substrate.connectors.envfiles import interpolate
from substrate.connectors.yamlnodes import Fact, compose_all, get, items, line_of, scalar

YAML_SUFFIXES = (".yml", ".yaml")
TEXT_SUFFIXES = (".conf", ".toml", ".ini", ".properties", ".cfg", ".hcl")
CONFIG_SUFFIXES = YAML_SUFFIXES + TEXT_SUFFIXES
MAX_VALUES = 2000  # a mounted file is configuration, not data: stop reading past this
_URL = re.compile(r"""[a-z][a-z0-9+.-]*://[^\s"';#{}]+""")
_TEXT_LINE = re.compile(r"""^\s*([A-Za-z0-9_.\-/]+)\s*(?:=|:|\s)\s*["']?([^"'\s;#]+)""")


@dataclass(frozen=True)
class Mounted:
    """A value of a mounted configuration file and the volume line that mounts the file."""

    key: str
    value: Fact
    mount: Fact


def is_config_file(path: str) -> bool:
    return path.lower().endswith(CONFIG_SUFFIXES)


def may_be_mounted(path: str) -> bool:
    """Could a Compose service mount this file (for the replay's path filter)?"""
    return is_config_file(path) and not path.startswith(".github/")


def _bind_source(volume: Node) -> tuple[str, Node] | None:
    """The host path of a bind mount (short ``SRC:DST[:MODE]`` or long ``{source: ...}``)."""
    text = scalar(volume)
    if text is not None:
        source = text.split(":", 1)[0] if ":" in text else ""
        return (source, volume) if source else None
    source_node = get(volume, "source")
    if scalar(get(volume, "type")) in (None, "bind") and scalar(source_node):
        return str(scalar(source_node)), source_node or volume
    return None


def mounted_files(volumes: Node | None, directory: str,
                  env: dict[str, str]) -> list[tuple[str, Node]]:
    """``(repository path, volume node)`` of each relative bind mount of a config file
    (named volumes, absolute host paths and folders are not read); ``env`` interpolates."""
    out = []
    for volume in items(volumes):
        found = _bind_source(volume)
        if found is None:
            continue
        source, node = interpolate(found[0], env), found[1]
        if not source.startswith(("./", "../")) or not is_config_file(source):
            continue
        path = posixpath.normpath(posixpath.join(directory, source))
        if not path.startswith("../"):
            out.append((path, node))
    return out


# keys whose values name what the file's service watches, not what it depends on: a
# Prometheus ``scrape_configs`` (also inside an OpenTelemetry collector's prometheus
# receiver) lists the targets it scrapes; reading them as calls made every scraped service
# a dependency of the monitor and inflated their dependents in the risk ranking
MONITORED_KEYS = frozenset({"scrape_configs"})


def _walk(node: Node, key: str) -> Iterator[tuple[str, Node]]:
    if isinstance(node, ScalarNode):
        yield key, node
    elif isinstance(node, SequenceNode):
        for item in node.value:
            yield from _walk(item, key)
    elif isinstance(node, MappingNode):
        for k, v in node.value:
            if isinstance(k, ScalarNode) and k.value not in MONITORED_KEYS:
                yield from _walk(v, str(k.value))


def _yaml_values(text: str, path: str) -> Iterator[tuple[str, Fact]]:
    for doc in compose_all(text):
        for key, node in _walk(doc, ""):
            if key and node.value:
                yield key, Fact(str(node.value), path, line_of(node))


def _text_values(text: str, path: str) -> Iterator[tuple[str, Fact]]:
    for n, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith(("#", ";", "//", "[")):
            continue
        found = _TEXT_LINE.match(line)
        if found:
            yield found.group(1), Fact(found.group(2), path, n)
        for url in _URL.findall(line):  # "location / { proxy_pass http://web:3000; }"
            if not found or url != found.group(2):
                yield "url", Fact(url, path, n)


def config_values(text: str, path: str) -> list[tuple[str, Fact]]:
    """``(key, value with its line)`` of a configuration file, in file order."""
    structured = path.lower().endswith((*YAML_SUFFIXES, ".json"))  # JSON is YAML
    values = _yaml_values(text, path) if structured and compose_all(text) else \
        _text_values(text, path)  # or, not parsing (appsettings.json with comments), by line
    out = []
    for pair in values:
        out.append(pair)
        if len(out) >= MAX_VALUES:
            break
    return out
