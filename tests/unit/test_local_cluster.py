"""The local test clusters pick their ports among the free ones of their ranges."""

from __future__ import annotations

import socket

import pytest

from substrate.errors import StackError
from substrate.stack.local_cluster import NATS_PORTS, REDIS_PORTS, free_ports


def test_a_held_port_is_skipped() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = int(held.getsockname()[1])
        ports = free_ports(range(port, port + 50), 3)
    assert port not in ports and len(ports) == 3 and ports == sorted(ports)


def test_too_few_free_ports_is_a_stack_error() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = int(held.getsockname()[1])
        with pytest.raises(StackError, match="fewer than 1 free ports"):
            free_ports(range(port, port + 1), 1)


def test_the_ranges_are_the_assigned_ones() -> None:
    assert (NATS_PORTS.start, NATS_PORTS.stop) == (50000, 50100)
    assert (REDIS_PORTS.start, REDIS_PORTS.stop) == (50100, 50200)
