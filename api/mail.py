"""Outgoing e-mail: over SMTP when `NICHESCOPE_SMTP_URL` is set, else to an outbox folder.

SMTP runs in a worker thread (smtplib is blocking), a few connections at a time. Without
SMTP, each message is written to the outbox folder as an .eml file and logged, so a local user
can still follow its links.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import trio

from api.http.errors import ServiceUnavailable
from api.http.security import new_id
from api.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_SENDER = "Nichescope <no-reply@nichescope.local>"
_TRUE = {"1", "true", "yes", "on"}


class MailUnavailable(ServiceUnavailable):
    code = "mail_unavailable"

    def __init__(self, reason: str) -> None:
        super().__init__(
            "The e-mail could not be sent; try again shortly",
            suggest=["Try again in a minute"],
            headers={"Retry-After": "30"},
        )
        self.reason = reason


@dataclass(frozen=True)
class SmtpTarget:
    """Where to deliver: parsed from `smtp://user:pass@host:587?starttls=1` (or `smtps://`
    for TLS from the first byte)."""

    host: str
    port: int
    username: str | None = None
    password: str | None = None
    starttls: bool = False
    implicit_tls: bool = False
    timeout: float = 30.0

    @classmethod
    def parse(cls, url: str) -> SmtpTarget:
        parts = urlsplit(url)
        if parts.scheme not in {"smtp", "smtps"} or not parts.hostname:
            raise ValueError("expected smtp://[user:pass@]host[:port][?starttls=1] or smtps://")
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        implicit = parts.scheme == "smtps"
        return cls(
            host=parts.hostname,
            port=parts.port or (465 if implicit else 25),
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            starttls=query.get("starttls", "0").lower() in _TRUE,
            implicit_tls=implicit,
            timeout=float(query.get("timeout", "30")),
        )

    def deliver(self, message: EmailMessage) -> None:
        """Blocking: connect, optionally upgrade to TLS, authenticate, send, quit."""
        context = ssl.create_default_context()
        client: smtplib.SMTP
        if self.implicit_tls:
            client = smtplib.SMTP_SSL(self.host, self.port, timeout=self.timeout, context=context)
        else:
            client = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
        with client:
            client.ehlo()
            if self.starttls:
                client.starttls(context=context)
                client.ehlo()
            if self.username is not None:
                client.login(self.username, self.password or "")
            client.send_message(message)


class Mailer:
    def __init__(
        self, outbox: Path, sender: str = DEFAULT_SENDER, smtp: SmtpTarget | None = None
    ) -> None:
        self._outbox = outbox
        self._sender = sender
        self._smtp = smtp
        # A burst of mail must not open unbounded connections to the relay.
        self._connections = trio.CapacityLimiter(4)

    @property
    def uses_smtp(self) -> bool:
        return self._smtp is not None

    async def send(self, to: str, subject: str, body: str) -> Path | None:
        """Send one plain-text message; returns the outbox path when there is no SMTP.

        Raises `MailUnavailable` if the SMTP server refuses or cannot be reached. On
        cancellation the worker thread is abandoned (smtplib cannot be interrupted); its
        socket timeout bounds how long it lingers.
        """
        message = EmailMessage()
        message["From"] = self._sender
        message["To"] = to
        message["Subject"] = subject
        message["Message-ID"] = f"<{new_id('mail')}@nichescope>"
        message.set_content(body)
        if self._smtp is not None:
            try:
                await trio.to_thread.run_sync(
                    self._smtp.deliver,
                    message,
                    limiter=self._connections,
                    abandon_on_cancel=True,
                )
            except (smtplib.SMTPException, OSError) as err:
                log.warning("mail to %s failed: %r", to, err)
                raise MailUnavailable(type(err).__name__) from err
            log.info("mail sent over SMTP: %s", subject)
            return None
        path = self._outbox / f"{new_id('mail')}.eml"

        def write() -> None:
            self._outbox.mkdir(parents=True, exist_ok=True)
            path.write_bytes(bytes(message))

        await trio.to_thread.run_sync(write)
        log.info("mail to outbox: %s (%s)", path, subject)
        return path


def normalise_email(email: str) -> str:
    """The form an address is stored and compared in (accounts, billing, notices)."""
    return email.strip().lower()


def mailer(settings: Settings) -> Mailer:
    """The mailer `settings` name: SMTP when configured, else the outbox folder."""
    return Mailer(
        settings.outbox_dir,
        settings.mail_from,
        SmtpTarget.parse(settings.smtp_url) if settings.smtp_url else None,
    )
