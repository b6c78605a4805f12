"""Outgoing e-mail. Until SMTP is configured (billing/e-mail issue), messages land in an
outbox folder as .eml files and a line in the log, so a local user can still follow links."""

from __future__ import annotations

import logging
from email.message import EmailMessage
from pathlib import Path

import trio

from .security import new_id

log = logging.getLogger(__name__)


class Mailer:
    def __init__(
        self, outbox: Path, sender: str = "Nichescope <no-reply@nichescope.local>"
    ) -> None:
        self._outbox = outbox
        self._sender = sender

    async def send(self, to: str, subject: str, body: str) -> Path:
        """Write one message to the outbox; returns its path. Blocking I/O runs in a thread."""
        message = EmailMessage()
        message["From"] = self._sender
        message["To"] = to
        message["Subject"] = subject
        message.set_content(body)
        path = self._outbox / f"{new_id('mail')}.eml"

        def write() -> None:
            self._outbox.mkdir(parents=True, exist_ok=True)
            path.write_bytes(bytes(message))

        await trio.to_thread.run_sync(write)
        log.info("mail to outbox: %s (%s)", path, subject)
        return path
