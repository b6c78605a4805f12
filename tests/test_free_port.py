"""`free_port` draws servers' ports outside the ephemeral range: a port `bind(0)` gave and a
child process bound a moment later could meanwhile become any outgoing connection's."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from bench._common import free_port, server_ports


def test_free_ports_are_bindable_and_drawn_from_the_servers_range() -> None:
    low, high = server_ports()
    ports = {free_port() for _ in range(20)}
    assert all(low <= port < high for port in ports), (low, high, sorted(ports))
    assert len(ports) > 10  # drawn, not the same few
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_the_servers_range_is_outside_the_ephemeral_one() -> None:
    ranges = Path("/proc/sys/net/ipv4/ip_local_port_range")
    if not ranges.exists():
        pytest.skip("no Linux /proc: nothing says which ports connections take")
    ephemeral_low, ephemeral_high = map(int, ranges.read_text().split())
    low, high = server_ports()
    assert high <= ephemeral_low or low > ephemeral_high, (low, high)


def test_a_port_in_use_is_never_drawn() -> None:
    # Every free port drawn is listened on, so no later draw may return one of them.
    held: list[socket.socket] = []
    try:
        for _ in range(30):
            sock = socket.socket()
            sock.bind(("127.0.0.1", free_port()))
            sock.listen()
            held.append(sock)
        taken = {s.getsockname()[1] for s in held}
        assert len(taken) == 30
    finally:
        for sock in held:
            sock.close()
