"""Which host names an environment variable points at.

``PAYMENT_URL=http://paymentservice:8080`` → ``paymentservice``;
``DATABASE_URL=postgres://u:p@orders-db:5432/orders`` → ``orders-db``;
``KAFKA_BROKERS=kafka:9092,kafka-2:9092`` → ``kafka``, ``kafka-2``;
``DB_HOST=orders-db`` → ``orders-db`` (a bare host only counts when the variable name says it
is an address: ``*_HOST``, ``*_ADDR``, ``*_BROKERS``, ``*_URL``, ...; a ``host:port`` or a
Kubernetes DNS name counts under any name: ``mongo=user-db:27017``);
``ConnectionStrings__CatalogDb=Server=sqldata;Database=CatalogDb;User Id=sa;Password=...`` →
``sqldata`` (a key=value connection string: ADO.NET, ODBC, Npgsql; its password masked).
Kubernetes DNS names ``svc.ns.svc.cluster.local`` / ``svc.ns.svc`` become ``(svc, ns)``.
Each reference keeps the ``address`` as written (``ledgerwriter:8080``, the whole URL) and the
``port`` when one is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import urlsplit

_ADDRESS_VAR = re.compile(
    r"(HOST|HOSTS|HOSTNAME|ADDR|ADDRS|ADDRESS|ADDRESSES|ENDPOINT|ENDPOINTS|SERVER|SERVERS|BROKER|BROKERS|"
    r"URL|URLS|URI|DSN|UPSTREAM|SERVICE|SERVICEID|SERVICE_ID|NODES|BOOTSTRAP)$"
)
_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$")
# "user-db:27017" under any name (Sock Shop's ``mongo=user-db:27017``): a host and a port
# say it is an address; so does a Kubernetes DNS name ("zipkin.jaeger.svc.cluster.local")
_HOST_PORT = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*:\d{2,5}$")
_K8S_SUFFIXES = (".svc.cluster.local", ".svc")
_LOCAL = frozenset({"localhost", "(local)", "."})
URL_PASSWORD = re.compile(r"(://[^:/@\s]+:)[^@\s]+@")
# a password in a key=value connection string (ADO.NET, ODBC, Npgsql, libpq, JDBC parameters)
KV_PASSWORD = re.compile(r"((?:^|[;?&\s])(?:password|pwd|passwd)\s*=\s*)[^;&\s]+", re.I)
# ADO.NET / ODBC / Npgsql: "Server=sqldata;Database=x;User Id=sa;Password=..."
_KV_HOST = re.compile(r"(?:^|;)\s*(?:server|data\s+source|host|address|addr"
                      r"|network\s+address)\s*=\s*([^;]+)", re.I)
_KV_PORT = re.compile(r"(?:^|;)\s*port\s*=\s*(\d+)", re.I)
# the conventional paths of health checks, probes and metrics ("http://basket-api/hc",
# "/healthz", "/actuator/health", "/-/ready"): a URL ending in one is not how peers call the host
_PROBE_PATH = re.compile(r"/(?:hc|health|healthz|healthcheck|health-check|healthy|liveness|livez"
                         r"|live|readiness|readyz|ready|ping|status|metrics|actuator(?:/\w+)?)"
                         r"/?$", re.I)


def is_probe(address: str) -> bool:
    """Is ``address`` a URL of a health check, probe or metrics endpoint?"""
    if "://" not in address:
        return False
    try:
        path = urlsplit(address).path
    except ValueError:
        return False
    return bool(_PROBE_PATH.search(path))


@dataclass(frozen=True)
class HostRef:
    """A host named by a variable; ``namespace`` when written as a Kubernetes DNS name."""

    host: str
    namespace: str | None = None
    address: str = field(default="", compare=False)
    port: int | None = field(default=None, compare=False)

    def edge_props(self) -> dict[str, str | int]:
        """``address``/``host``/``port`` as properties of a dependency edge."""
        props: dict[str, str | int] = {"address": self.address, "host": self.host}
        if self.port is not None:
            props["port"] = self.port
        return props


def _port(text: str) -> int | None:
    return int(text) if text.isdigit() and 0 < int(text) < 65536 else None


def _split_host(item: str) -> tuple[str | None, int | None]:
    if "://" in item:
        try:
            url = urlsplit(item.split(":", 1)[1] if item.startswith("jdbc:") else item)
            return url.hostname, url.port
        except ValueError:
            return None, None
    host = item.rsplit("@", 1)[-1].split("/", 1)[0]
    port = None
    if host.count(":") == 1:
        host, _, tail = host.partition(":")
        port = _port(tail)
    return (host, port) if _HOST.match(host) else (None, None)


def _k8s(host: str, address: str, port: int | None) -> HostRef:
    for suffix in _K8S_SUFFIXES:
        if host.endswith(suffix):
            parts = host[: -len(suffix)].split(".")
            return HostRef(parts[0], parts[1] if len(parts) > 1 else None, address, port)
    return HostRef(host, None, address, port)


# Go's MySQL DSN "user:password@tcp(host:3306)/db" has no scheme for URL_PASSWORD to see
DSN_PASSWORD = re.compile(r"(^|[\s=])([^\s:@/=]+:)[^@\s]+(@(?:tcp|unix)\()")


@lru_cache(maxsize=16_384)
def mask_passwords(value: str) -> str:
    """``value`` with the password of a URL, of a key=value connection string or of a Go
    MySQL DSN masked."""
    masked = URL_PASSWORD.sub(r"\1***@", value)
    return DSN_PASSWORD.sub(r"\1\2***\3", KV_PASSWORD.sub(r"\1***", masked))


def _connection_string(value: str) -> list[HostRef]:
    """The hosts of a key=value connection string (``Server=tcp:db,1433``, ``Host=a,b``)."""
    found = _KV_HOST.search(value)
    if found is None:
        return []
    written = found.group(1).strip()
    written = re.sub(r"^(?:tcp|np|lpc):", "", written, flags=re.I)
    port_kv = _KV_PORT.search(value)
    head, _, tail = written.partition(",")
    items = [(head, _port(tail.strip()))] if _port(tail.strip()) else \
        [(h.strip(), None) for h in written.split(",")]
    out: list[HostRef] = []
    for item, port in items:
        host, inline = _split_host(item.split("\\", 1)[0])  # "host\\INSTANCE" (SQL Server)
        port = port or inline or (_port(port_kv.group(1)) if port_kv else None)
        if host and not host.replace(".", "").isdigit() and host.lower() not in _LOCAL:
            out.append(_k8s(host.lower(), mask_passwords(value), port))
    return out


_GO_DSN = re.compile(r"@tcp\((?P<host>[^)]+)\)")  # Go's MySQL DSN: user:pw@tcp(db:3306)/name
# libpq's keyword/value connection string: "host=db port=5432 user=app dbname=orders"
# (psycopg, Go's lib/pq and pgx, ``PG*`` tools)
_LIBPQ = re.compile(r"^(?:\s*[A-Za-z_]+\s*=\s*(?:'[^']*'|[^\s']*))+\s*$")
_LIBPQ_HOST = re.compile(r"(?:^|\s)host\s*=\s*'?([^\s']+)", re.I)
_LIBPQ_PORT = re.compile(r"(?:^|\s)port\s*=\s*'?(\d+)", re.I)


def _libpq(value: str) -> list[HostRef]:
    """The hosts of a libpq keyword/value connection string (``host=a,b port=5432``)."""
    found = _LIBPQ_HOST.search(value)
    port = _LIBPQ_PORT.search(value)
    out: list[HostRef] = []
    for host in (found.group(1).split(",") if found else []):
        # (a Unix socket's folder, "/var/run/postgresql", is no host: _HOST)
        if _HOST.match(host) and host.lower() not in _LOCAL \
                and not host.replace(".", "").isdigit():
            out.append(_k8s(host.lower(), mask_passwords(value),
                            _port(port.group(1)) if port else None))
    return out


def hosts_in(var: str, value: str) -> list[HostRef]:
    """Host references in one environment variable (``[]`` when it names none)."""
    return list(_hosts_in(var, value))


@lru_cache(maxsize=16_384)  # a replay reads the same variables at every commit it parses
def _hosts_in(var: str, value: str) -> tuple[HostRef, ...]:
    return tuple(_find_hosts(var, value))


def _find_hosts(var: str, value: str) -> list[HostRef]:
    value = value.strip()
    dsn = _GO_DSN.search(value)
    if dsn is not None and "://" not in value:
        host, port = _split_host(dsn["host"])
        if host and host.lower() not in _LOCAL and not host.replace(".", "").isdigit():
            return [_k8s(host.lower(), mask_passwords(value), port)]
        return []
    if value and "://" not in value and ";" in value and "=" in value:
        return _connection_string(value)
    if " " in value and "://" not in value and _LIBPQ.match(value):
        return _libpq(value)
    if not value or (" " in value and "://" not in value):
        return []
    is_address = bool(_ADDRESS_VAR.search(var.upper()))
    out: list[HostRef] = []
    for item in (i.strip() for i in value.split(",")):
        if not item or ("://" not in item and not is_address and not _HOST_PORT.match(item)
                        and not item.lower().endswith(_K8S_SUFFIXES)):
            continue
        host, port = _split_host(item)
        if host and not host.replace(".", "").isdigit() and host.lower() not in _LOCAL:
            ref = _k8s(host.lower(), mask_passwords(item), port)
            if ref not in out:
                out.append(ref)
    return out
