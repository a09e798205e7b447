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

A Spring Cloud Config server with the native backend serves each application the files named
after it (piggymetrics' ``config/src/main/resources/shared/gateway.yml``, a ``config-repo/``
folder): such a file, ``<application>.yml`` or ``<application>-<profile>.yml``, is read as the
configuration of the service of that name (a gateway's Zuul routes ``url:
http://auth-service:5000``, ``serviceId: account-service``); the shared ``application.yml``,
which every application gets, is not.
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
# Spring Cloud Config's native backend: the files a config server serves, by application name
_SERVED = re.compile(r"(?:^|/)(?:src/main/resources/(?:shared|config|configs)|config-repo)/"
                     r"([\w.-]+)\.(?:ya?ml|properties)$")
_PROFILES = frozenset({"docker", "dev", "development", "local", "prod", "production", "staging",
                       "test", "k8s", "kubernetes", "cloud", "native"})


def is_app_config_path(path: str) -> bool:
    return bool(_SPRING.search(path) or _ASPNET.search(path) or _SERVED.search(path))


def served_config_files(candidates: list[str], name: str) -> list[str]:
    """The files a Spring Cloud Config server serves the application ``name`` (among
    ``candidates``): ``<name>.yml`` and ``<name>-<profile>.yml``."""
    out = []
    for path in candidates:
        found = _SERVED.search(path)
        if found is None:
            continue
        stem = found.group(1)
        profile = stem[len(name) + 1:] if stem.startswith(name + "-") else None
        if stem == name or profile in _PROFILES:
            out.append(path)
    return sorted(out)


def app_config_files(candidates: list[str], folder: str) -> list[str]:
    """The application configuration files (among ``candidates``: the repository's paths
    :func:`is_app_config_path` keeps) of the service whose source is ``folder``."""
    prefix = folder.rstrip("/") + "/"
    depth = {3: _SPRING, 0: _ASPNET}  # src/main/resources/x; the project's own folder
    return sorted(p for p in candidates if p.startswith(prefix)
                  and (rx := depth.get(posixpath.relpath(p, folder).count("/"))) is not None
                  and rx.search(p))


def app_config_values(snap: GitSnapshot, folder: str, candidates: list[str],
                      name: str = "") -> list[tuple[str, Fact]]:
    """``(key, value)`` of every value of those files (and of the files a config server
    serves the application ``name``), placeholders resolved to their defaults and a
    ``configserver:`` import reduced to its URL."""
    paths = app_config_files(candidates, folder) + (
        served_config_files(candidates, name) if name else [])
    snap.preload(paths)
    out: list[tuple[str, Fact]] = []
    for path in paths:
        for key, fact in config_values(snap.read(path), path):
            value = _IMPORT.sub("", _PLACEHOLDER.sub(lambda m: m.group(1) or "", fact.value))
            if value.strip():
                out.append((key, Fact(value, fact.path, fact.line)))
    return out
