"""A real SMTP server for tests: aiosmtpd on loopback, keeping every message it accepts."""

from __future__ import annotations

import asyncio
import email
import email.policy
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller

from bench._common import free_port


class SmtpInbox:
    """aiosmtpd handler (it runs on the controller's thread and loop): every message kept."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.messages.append(message)  # type: ignore[arg-type]
        return "250 Message accepted for delivery"

    def to(self, address: str) -> list[EmailMessage]:
        return [m for m in list(self.messages) if m["To"] == address]


@contextmanager
def smtp_server() -> Iterator[tuple[SmtpInbox, int]]:
    """An SMTP server on a free loopback port while the block runs: (its inbox, its port)."""
    inbox = SmtpInbox()
    port = free_port()
    # A plain asyncio loop of its own: trio-asyncio's policy would hand the thread a loop it
    # cannot run there.
    loop = asyncio.SelectorEventLoop()
    controller = Controller(inbox, hostname="127.0.0.1", port=port, loop=loop)
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()
        loop.close()
