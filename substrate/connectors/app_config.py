"""Addresses in a service's own application configuration: Spring Boot's
``src/main/resources/application*.yml|yaml|properties`` (and ``bootstrap*``) in the service's
source folder, and ASP.NET Core's ``appsettings*.json`` beside its project (a YARP gateway's
``"Address": "http://catalog-api/"`` clusters, connection strings).

A Spring service takes its peers from there rather than from its environment: a gateway's
routes (``uri: lb://customers-service``, the load-balanced name of a registered service), the
config server it imports (``import: configserver:http://config-server:8888``), its datasource
(``url: jdbc:mysql://mysql:3306/petclinic``), the registry (``defaultZone:
http://discovery-server:8761/eureka/``). Each value is read with its line
(:func:`substrate.connectors.mounts.config_values`), Spring placeholders take their default
(``${CONFIG_SERVER_URL:http://localhost:8888/}`` -> ``http://localhost:8888/``, which names no
peer), and the manifest reader treats it like an environment variable (a URL, or a bare host
under an address-like key, names a host): CALLS to a service, DEPENDS_ON to infrastructure,
``via: app_config`` with the file on the edge.
"""

from __future__ import annotations

import posixpath
import re

from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.mounts import config_values
from substrate.connectors.yamlnodes import Fact

_SPRING = re.compile(r"(?:^|/)src/main/resources/(?:application|bootstrap)(?:-[\w.-]+)?"
                     r"\.(?:ya?ml|properties)$")
_ASPNET = re.compile(r"(?:^|/)appsettings(?:\.[\w-]+)?\.json$")
_PLACEHOLDER = re.compile(r"\$\{[^}:]+:([^}]*)\}|\$\{[^}]*\}")
_IMPORT = re.compile(r"^(?:optional:)?configserver:", re.I)


def is_app_config_path(path: str) -> bool:
    return bool(_SPRING.search(path) or _ASPNET.search(path))


def app_config_files(candidates: list[str], folder: str) -> list[str]:
    """The application configuration files (among ``candidates``: the repository's paths
    :func:`is_app_config_path` keeps) of the service whose source is ``folder``."""
    prefix = folder.rstrip("/") + "/"
    depth = {3: _SPRING, 0: _ASPNET}  # src/main/resources/x; the project's own folder
    return sorted(p for p in candidates if p.startswith(prefix)
                  and (rx := depth.get(posixpath.relpath(p, folder).count("/"))) is not None
                  and rx.search(p))


def app_config_values(snap: GitSnapshot, folder: str,
                      candidates: list[str]) -> list[tuple[str, Fact]]:
    """``(key, value)`` of every value of those files, placeholders resolved to their
    defaults and a ``configserver:`` import reduced to its URL."""
    paths = app_config_files(candidates, folder)
    snap.preload(paths)
    out: list[tuple[str, Fact]] = []
    for path in paths:
        for key, fact in config_values(snap.read(path), path):
            value = _IMPORT.sub("", _PLACEHOLDER.sub(lambda m: m.group(1) or "", fact.value))
            if value.strip():
                out.append((key, Fact(value, fact.path, fact.line)))
    return out
