"""SSRF at delivery: a webhook whose host resolved to a public address when the channel was
made, and resolves to a loopback, private or metadata address when an alert is sent (DNS
rebinding, or a record changed since), is refused before any socket opens.

Tested at the engine's level, where the resolver can be injected (the outbound client takes
one): the channel is checked as the API checks it (`check_destination`), its secrets sealed
and opened as the store and the courier do, and the alert delivered through the guarded
client. A plain TCP listener on 127.0.0.1 counts connections: none may reach it.
"""

from __future__ import annotations

import pytest
import trio

from engine.notifications import (
    Outgoing,
    SecretBox,
    check_destination,
    deliver,
    open_outbound,
)

PUBLIC = "93.184.215.14"


class Dns:
    """A resolver whose answer the test changes, and which notes every look-up."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        return [self.answer]


class Listener:
    """A TCP listener on loopback that only counts the connections it accepts."""

    def __init__(self) -> None:
        self.port = 0
        self.connections = 0

    async def run(self, *, task_status: trio.TaskStatus[None]) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        async with listeners[0]:
            while True:
                stream = await listeners[0].accept()
                self.connections += 1
                await stream.aclose()


@pytest.mark.parametrize("rebound", ["127.0.0.1", "::1", "10.0.0.5", "169.254.169.254"])
async def test_a_webhook_host_rebound_to_a_private_address_is_refused_at_delivery(
    nursery: trio.Nursery, rebound: str
) -> None:
    listener = Listener()
    await nursery.start(listener.run)
    dns = Dns(PUBLIC)
    url = f"https://hooks.example.com:{listener.port}/in"

    # Made: the host resolves to a public address, so the channel is accepted.
    destination = await check_destination("webhook", {"url": url}, resolver=dns)
    assert destination.secrets["url"] == url and dns.asked == ["hooks.example.com"]
    box = SecretBox("a secret key of this service, long enough")
    sealed = box.seal(destination.secrets)  # what the store keeps

    # Sent: the same name now answers a non-public address.
    dns.answer = rebound
    alert = Outgoing("ntf_rebound", {"type": "listing.new", "version": 1, "id": "ntf_rebound"})
    async with open_outbound(resolver=dns) as http:
        result = await deliver(_Webhook(), box.open(sealed), [alert], http)

    assert not result.ok and result.status_code is None
    assert result.error is not None and "not contacted" in result.error, result.error
    assert "non-public" in result.error or "metadata" in result.error, result.error
    assert not result.permanent  # the record may be fixed: tried again later, logged each time
    assert result.delivered == ()
    assert dns.asked == ["hooks.example.com", "hooks.example.com"]  # looked up at delivery
    assert listener.connections == 0


class _Webhook:
    id = "chn_rebound"
    kind = "webhook"
