"""Which host names an environment variable points at.

``PAYMENT_URL=http://paymentservice:8080`` → ``paymentservice``;
``DATABASE_URL=postgres://u:p@orders-db:5432/orders`` → ``orders-db``;
``KAFKA_BROKERS=kafka:9092,kafka-2:9092`` → ``kafka``, ``kafka-2``;
``DB_HOST=orders-db`` → ``orders-db`` (a bare host only counts when the variable name says it
is an address: ``*_HOST``, ``*_ADDR``, ``*_BROKERS``, ``*_URL``, ...).
Kubernetes DNS names ``svc.ns.svc.cluster.local`` / ``svc.ns.svc`` become ``(svc, ns)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

_ADDRESS_VAR = re.compile(
    r"(HOST|HOSTS|HOSTNAME|ADDR|ADDRESS|ENDPOINT|ENDPOINTS|SERVER|SERVERS|BROKER|BROKERS|"
    r"URL|URLS|URI|DSN|UPSTREAM|SERVICE|NODES|BOOTSTRAP)$"
)
_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$")
_K8S_SUFFIXES = (".svc.cluster.local", ".svc")


@dataclass(frozen=True)
class HostRef:
    """A host named by a variable; ``namespace`` when written as a Kubernetes DNS name."""

    host: str
    namespace: str | None = None


def _split_host(item: str) -> str | None:
    if "://" in item:
        try:
            return urlsplit(item.split(":", 1)[1] if item.startswith("jdbc:") else item).hostname
        except ValueError:
            return None
    host = item.rsplit("@", 1)[-1].split("/", 1)[0]
    host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return host if _HOST.match(host) else None


def _k8s(host: str) -> HostRef:
    for suffix in _K8S_SUFFIXES:
        if host.endswith(suffix):
            parts = host[: -len(suffix)].split(".")
            return HostRef(parts[0], parts[1] if len(parts) > 1 else None)
    return HostRef(host)


def hosts_in(var: str, value: str) -> list[HostRef]:
    """Host references in one environment variable (``[]`` when it names none)."""
    value = value.strip()
    if not value or (" " in value and "://" not in value):
        return []
    is_address = bool(_ADDRESS_VAR.search(var.upper()))
    out: list[HostRef] = []
    for item in (i.strip() for i in value.split(",")):
        if not item or ("://" not in item and not is_address):
            continue
        host = _split_host(item)
        if host and not host.replace(".", "").isdigit() and host != "localhost":
            ref = _k8s(host.lower())
            if ref not in out:
                out.append(ref)
    return out
