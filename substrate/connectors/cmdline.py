"""Addresses a container's command line names: ``command: -d 60 -r 200 -h edge-router``
(Sock Shop's load test), ``args: ["-mongo-host=user-db:27017"]``, ``--db-host mysql``,
``-alertmanager.url=http://alertmanager:9093``.

A flag's value counts as :func:`substrate.connectors.endpoints.hosts_in` would count it under a
variable of the flag's name (``-mongo-host`` is ``MONGO_HOST``, ``-h`` is ``HOST``): a bare host
only after a flag that says it is an address, a URL, a ``host:port`` or a Kubernetes DNS name
after any flag; a URL anywhere on the line counts too. Each value keeps its line.
"""

from __future__ import annotations

import re
import shlex

from substrate.connectors.endpoints import hosts_in
from substrate.connectors.yamlnodes import Fact

_FLAG = re.compile(r"^(?P<dash>--?)(?P<name>[A-Za-z][\w.-]*)(?:=(?P<value>.*))?$")
_SHORT = {"h": "HOST", "H": "HOST", "s": "SERVER", "u": "URL", "b": "BROKERS"}


def tokens(command: Fact) -> list[Fact]:
    """A command written as one string (``command: "-h edge-router"``), split as a shell
    would, each word at the string's line."""
    try:
        words = shlex.split(command.value)
    except ValueError:
        words = command.value.split()
    return [Fact(w, command.path, command.line) for w in words]


def _var(flag: str) -> str:
    return _SHORT.get(flag) or re.sub(r"[.-]+", "_", flag).upper()


def arg_addresses(args: list[Fact]) -> list[tuple[str, str, Fact]]:
    """``(flag as written, its variable name, value)`` of each argument naming a host:
    ``("-h", "HOST", edge-router)``."""
    out: list[tuple[str, str, Fact]] = []
    taken: set[int] = set()  # a flag's value, read with the flag
    for i, arg in enumerate(args):
        if i in taken:
            continue
        m = _FLAG.match(arg.value)
        if m is not None and m["value"] is not None:
            value, flag, written = m["value"], m["name"], m["dash"] + m["name"]
        elif m is not None and i + 1 < len(args) and not args[i + 1].value.startswith("-"):
            value, flag, written = args[i + 1].value, m["name"], arg.value
            arg = args[i + 1]
            taken.add(i + 1)
        elif m is None and "://" in arg.value:
            value, flag, written = arg.value, "url", "(argument)"
        else:
            continue
        if hosts_in(_var(flag), value):
            out.append((written, _var(flag), Fact(value, arg.path, arg.line)))
    return out
