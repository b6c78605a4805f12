"""What users give as a destination, checked before it is stored and masked for display.

Every check raises `DestinationRefused(reason)` with the reason in words, and sends nothing
anywhere (a webhook host is only looked up in DNS). The outcome is a `Destination`: the
secrets to seal (`SecretBox`) and the hint that may be shown (never the whole secret).

Secrets per channel kind (the sealed JSON object; senders read the same keys):
- `webhook`: `url`, `signing_secret` (`whsec_...`), and while a rotation overlaps
  `previous_signing_secret` with `previous_until` (unix seconds);
- `discord`: `url` (`https://discord.com/api/webhooks/<id>/<token>`);
- `telegram`: `bot_token`, `chat_id` (an int, or an `@channelname` str);
- `email`: `to`.

`allow` is `Settings.outbound_allow`: exact origins (tests, demos) that webhook and Discord
URLs may name although the SSRF guard would refuse them; plain http only for those.
"""

from __future__ import annotations

import ipaddress
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from email_validator import EmailNotValidError, validate_email

from scrapers import Resolver, UrlRefused, check_public_url, check_public_url_syntax

from ._signing import new_signing_secret

ChannelKind = Literal["email", "webhook", "telegram", "discord"]
CHANNEL_KINDS: tuple[str, ...] = get_args(ChannelKind)

DISCORD_HOSTS = frozenset(
    {"discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com"}
)
_DISCORD_PATH = re.compile(r"^/api/webhooks/(\d{1,25})/([A-Za-z0-9_-]{20,200})/?$")
TELEGRAM_TOKEN = re.compile(r"^\d{3,20}:[A-Za-z0-9_-]{30,100}$")
_TELEGRAM_CHANNEL = re.compile(r"^@[A-Za-z][A-Za-z0-9_]{3,31}$")
_TELEGRAM_CHAT_ID = re.compile(r"^-?\d{1,20}$")
ROTATION_OVERLAP_SECONDS = 24 * 3600


class DestinationRefused(Exception):
    """A destination that will not be stored (or, at delivery, used); `reason` in words.

    `allowlist_opens`: the SSRF guard refused the URL for a rule that an allowlisted origin
    (`allow`, the operator's setting) is exempt from (a private or metadata address, an
    address or single-label host, plain http), so naming its origin there would admit it;
    a caller can say so without saying what the host resolves to."""

    def __init__(
        self, reason: str, field: str | None = None, *, allowlist_opens: bool = False
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field
        self.allowlist_opens = allowlist_opens


@dataclass(frozen=True, slots=True)
class Destination:
    """A checked destination: what to seal and what to show."""

    kind: ChannelKind
    secrets: dict[str, Any]
    hint: str


# -- checks ------------------------------------------------------------------------------------


def _allowlist_opens(url: str, refusal: UrlRefused) -> bool:
    """Whether the guard, which refused `url` with `refusal`, would admit it with its origin
    allowlisted. Not for a URL of the wrong shape (userinfo, a fragment, ...), refused
    whatever the allowlist, nor for a name that does not resolve: only a private or metadata
    address (the look-up found one) or a host the public rules refuse before any look-up."""
    if refusal.address is not None:
        return True
    try:
        parts = urlsplit(url)
        check_public_url_syntax(url, (f"{parts.scheme}://{parts.netloc}",))
    except (UrlRefused, ValueError):
        return False
    try:
        check_public_url_syntax(url)
    except UrlRefused:
        return True
    return False  # only the look-up refused it: the name does not resolve


def _url_refused(what: str, url: str, err: UrlRefused) -> DestinationRefused:
    opens = _allowlist_opens(url, err)
    return DestinationRefused(f"{what} refused: {err.reason}", "url", allowlist_opens=opens)


async def check_webhook_url(
    url: str, allow: Iterable[str] = (), *, resolver: Resolver | None = None
) -> str:
    """The normalised webhook URL: https, no userinfo, no IP literal, and a host resolving only
    to public addresses (unless its origin is allowlisted). Cancellation of the DNS look-up
    propagates; every refusal is `DestinationRefused`."""
    try:
        checked = await check_public_url(url, tuple(allow), resolver=resolver)
    except UrlRefused as err:
        raise _url_refused("webhook URL", url, err) from err
    return checked.url


def check_webhook_url_syntax(url: str, allow: Iterable[str] = ()) -> str:
    """The static half of `check_webhook_url` (no DNS): what a sender re-checks before each
    delivery, since the allowlist may have changed since the channel was made."""
    try:
        checked, _ = check_public_url_syntax(url, tuple(allow))
    except UrlRefused as err:
        raise _url_refused("webhook URL", url, err) from err
    return checked.url


def check_discord_url(url: str, allow: Iterable[str] = ()) -> str:
    """A Discord webhook URL, normalised (no query, no trailing slash): https on one of
    Discord's hosts, path `/api/webhooks/<digits>/<token>`; or an allowlisted origin with that
    path (a fake in tests). No DNS: Discord's hosts are public, and the socket is guarded anyway."""
    try:
        checked, explicit = check_public_url_syntax(url, tuple(allow))
    except UrlRefused as err:
        raise _url_refused("Discord webhook URL", url, err) from err
    if not explicit and (checked.host not in DISCORD_HOSTS or checked.port != 443):
        raise DestinationRefused(
            "a Discord webhook URL is https://discord.com/api/webhooks/<id>/<token>", "url"
        )
    parts = urlsplit(checked.url)
    match = _DISCORD_PATH.match(parts.path)
    if match is None or parts.query:
        raise DestinationRefused(
            "a Discord webhook URL has the path /api/webhooks/<id>/<token> and no query", "url"
        )
    return f"{checked.origin}/api/webhooks/{match.group(1)}/{match.group(2)}"


def check_telegram_token(token: str) -> str:
    """A bot token as BotFather gives it (`123456789:AA...`)."""
    token = token.strip() if isinstance(token, str) else ""
    if not TELEGRAM_TOKEN.match(token):
        raise DestinationRefused(
            "a Telegram bot token looks like 123456789:AAH... (from @BotFather)", "bot_token"
        )
    return token


def check_telegram_chat(chat_id: str | int) -> str | int:
    """A chat id: an integer (negative for groups and channels) or `@channelname`."""
    if isinstance(chat_id, bool):
        raise DestinationRefused("a Telegram chat id is a number or @channelname", "chat_id")
    if isinstance(chat_id, int):
        chat = str(chat_id)
    elif isinstance(chat_id, str):
        chat = chat_id.strip()
    else:
        chat = ""
    if _TELEGRAM_CHAT_ID.match(chat) and abs(int(chat)) < 2**63:
        return int(chat)
    if _TELEGRAM_CHANNEL.match(chat):
        return chat
    raise DestinationRefused("a Telegram chat id is a number or @channelname", "chat_id")


def check_email_address(address: str) -> str:
    """The normalised address (syntax only: no DNS, so nothing leaves the machine; at most 64
    characters before the @, as `api/http/email_address.py` documents)."""
    try:
        checked = validate_email(str(address).strip(), check_deliverability=False, strict=True)
        return checked.normalized
    except EmailNotValidError as err:
        raise DestinationRefused(f"not an e-mail address: {err}", "to") from err


async def check_destination(
    kind: str,
    given: Mapping[str, Any],
    *,
    allow: Iterable[str] = (),
    resolver: Resolver | None = None,
    signing_secret: str | None = None,
) -> Destination:
    """Check what a user gave for a channel of `kind` and build what is sealed and shown.

    `given` holds `url` (webhook, discord), `bot_token` and `chat_id` (telegram) or `to`
    (email). A webhook gets a fresh signing secret unless `signing_secret` is given (an
    update keeping the secret its receiver already knows). Raises `DestinationRefused`.
    """
    if kind == "webhook":
        url = await check_webhook_url(_text(given, "url"), allow, resolver=resolver)
        secrets: dict[str, Any] = {
            "url": url,
            "signing_secret": signing_secret or new_signing_secret(),
        }
        return Destination("webhook", secrets, mask_webhook_url(url))
    if kind == "discord":
        url = check_discord_url(_text(given, "url"), allow)
        return Destination("discord", {"url": url}, mask_discord_url(url))
    if kind == "telegram":
        token = check_telegram_token(_text(given, "bot_token"))
        chat = check_telegram_chat(given.get("chat_id", ""))
        secrets = {"bot_token": token, "chat_id": chat}
        return Destination("telegram", secrets, mask_telegram(token, chat))
    if kind == "email":
        to = check_email_address(_text(given, "to"))
        return Destination("email", {"to": to}, mask_email(to))
    raise DestinationRefused(f"unknown channel kind {kind!r}; one of {', '.join(CHANNEL_KINDS)}")


def _text(given: Mapping[str, Any], key: str) -> str:
    value = given.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DestinationRefused(f"{key} is required", key)
    return value.strip()


# -- signing secrets of a webhook ----------------------------------------------------------------


def rotate_signing_secret(
    secrets: Mapping[str, Any],
    *,
    overlap_seconds: float = ROTATION_OVERLAP_SECONDS,
    now: float | None = None,
) -> dict[str, Any]:
    """A webhook's secrets with a new signing secret; the old one keeps signing too (a second
    signature in the header) for `overlap_seconds`, so the receiver can switch without loss."""
    when = time.time() if now is None else now
    rotated = dict(secrets)
    rotated["previous_signing_secret"] = secrets["signing_secret"]
    rotated["previous_until"] = int(when + overlap_seconds)
    rotated["signing_secret"] = new_signing_secret()
    return rotated


def signing_secrets(secrets: Mapping[str, Any], *, now: float | None = None) -> list[str]:
    """The secrets to sign with now: the current one, then the previous while it overlaps."""
    keys = [str(secrets["signing_secret"])]
    previous = secrets.get("previous_signing_secret")
    until = secrets.get("previous_until")
    when = time.time() if now is None else now
    if previous and isinstance(until, (int, float)) and when < until:
        keys.append(str(previous))
    return keys


# -- masks -------------------------------------------------------------------------------------


def _tail(secret: str, keep: int = 4) -> str:
    """`…` and the last `keep` characters, only when at least twice as many stay hidden."""
    return "…" + secret[-keep:] if len(secret) >= 3 * keep else "…"


# Second-level labels under which registries sell names (`example.co.uk`, `shop.com.au`):
# under a two-letter country label after one of them, the registered name is three labels.
_SECOND_LEVELS = frozenset({"ac", "co", "com", "edu", "go", "gov", "ne", "net", "or", "org"})


def mask_host(host: str) -> str:
    """`*.example.com` for `hooks.example.com`: the registered name, which its owner
    recognises, and never the labels before it, where services put a per-user secret
    (`<endpoint id>.m.pipedream.net`, `<tunnel>.ngrok.app`). An address is shown as it is:
    only an origin the operator allowlisted may be one, and it names no service."""
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host
    except ValueError:
        pass
    labels = host.split(".")
    under_registry = len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVELS
    keep = 3 if under_registry else 2
    return host if len(labels) <= keep else "*." + ".".join(labels[-keep:])


def mask_webhook_url(url: str) -> str:
    """`https://*.example.com/…3f2a`: the scheme, the host's registered name (`mask_host`),
    the port, and only the end of the path and query (where tokens usually are)."""
    parts = urlsplit(url)
    rest = parts.path.lstrip("/") + (f"?{parts.query}" if parts.query else "")
    host = parts.hostname or ""
    shown = f"[{host}]" if ":" in host else mask_host(host)
    origin = f"{parts.scheme}://{shown}" + (f":{parts.port}" if parts.port else "")
    return f"{origin}/{_tail(rest)}" if rest else origin + "/"


def mask_discord_url(url: str) -> str:
    """`discord webhook …/9a8b`: the token's last characters only."""
    return f"discord webhook …/{urlsplit(url).path.rstrip('/').rsplit('/', 1)[-1][-4:]}"


def mask_telegram(token: str, chat_id: str | int) -> str:
    """`bot …Xk2a · chat 12345` (a chat id is no secret: it only names the chat)."""
    return f"bot {_tail(token)} · chat {chat_id}"


def mask_email(address: str) -> str:
    """`a***@example.com`, `a***@*.example.com` (the domain masked as `mask_host` does)."""
    local, _, domain = address.rpartition("@")
    return f"{local[:1]}***@{mask_host(domain)}" if local else "***"


def hint_for(kind: str, secrets: Mapping[str, Any]) -> str:
    """The hint of a channel from its (opened) secrets."""
    if kind == "webhook":
        return mask_webhook_url(str(secrets["url"]))
    if kind == "discord":
        return mask_discord_url(str(secrets["url"]))
    if kind == "telegram":
        return mask_telegram(str(secrets["bot_token"]), secrets["chat_id"])
    if kind == "email":
        return mask_email(str(secrets["to"]))
    raise DestinationRefused(f"unknown channel kind {kind!r}")
