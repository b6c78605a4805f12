"""What each channel says about a batch of alerts (their stored payloads), within its limits.

Pure functions. Text from the marketplace and from users (titles, brands, monitor labels) is
untrusted: Telegram's HTML is escaped, Discord may never ping anyone (`allowed_mentions`),
e-mail subjects carry no line breaks, and only http(s) links are ever linked. A batch larger
than a message can hold is cut, ending with "… and N more".
"""

from __future__ import annotations

import html
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from engine.money import CURRENCY_SYMBOLS

TELEGRAM_LIMIT = 4096
DISCORD_EMBEDS = 10
DISCORD_TOTAL = 6000  # characters over all embeds' titles, descriptions, fields and footers
DISCORD_TITLE = 256
DISCORD_DESCRIPTION = 4096
DISCORD_FIELD_VALUE = 1024

LABELS = {
    "listing.new": "New listing",
    "listing.deal": "Deal",
    "listing.price_drop": "Price drop",
    "niche.sell_through_jump": "Niche selling faster",
    "niche.new_hot": "New hot niche",
    "monitor.error": "Monitor error",
    "test.ping": "Test",
}
_COLOURS = {"listing.deal": 0x2E7D32, "listing.price_drop": 0x1565C0, "monitor.error": 0xC62828}


@dataclass(frozen=True, slots=True)
class MailText:
    subject: str
    body: str


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A notification not from the outbox (a test ping): what `deliver` needs of one."""

    id: str
    payload: Mapping[str, Any] = field(default_factory=dict)


def ping_notification(now: datetime | None = None) -> Outgoing:
    """A `test.ping` to send when a user asks "send a test" (its id is a fresh `ntf_...`)."""
    ident = f"ntf_test_{secrets.token_hex(8)}"
    when = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    payload = {
        "type": "test.ping",
        "version": 1,
        "id": ident,
        "created_at": when,
        "message": "This is a test from Nichescope: alerts will arrive here.",
    }
    return Outgoing(ident, payload)


# -- what an alert says, whatever the channel -------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Alert:
    kind: str
    label: str
    monitor: str
    title: str
    url: str | None
    photo: str | None
    price: str | None
    facts: str  # brand · size · condition (a listing), or the monitor's status (an error)
    niche: str  # the niche's label
    reason: str
    created_at: str | None


def _d(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _s(value: Any) -> str:
    return "" if value is None else " ".join(str(value).split())


def _link(value: Any) -> str | None:
    text = _s(value)
    return text if text.startswith(("https://", "http://")) and len(text) <= 1000 else None


def _money(amount: Any, currency: str) -> str:
    if amount in (None, ""):
        return ""
    symbol = CURRENCY_SYMBOLS.get(currency)
    return f"{symbol}{amount}" if symbol else f"{amount} {currency}".strip()


def _alert(payload: Mapping[str, Any]) -> _Alert:
    kind = _s(payload.get("type"))
    monitor = _d(payload.get("monitor"))
    listing = _d(payload.get("listing"))
    niche = _d(payload.get("niche"))
    price = None
    if listing:
        currency = _s(listing.get("currency"))
        price = _money(listing.get("price"), currency)
        if listing.get("previous_price") not in (None, ""):
            price += f" (was {_money(listing.get('previous_price'), currency)})"
        title = _s(listing.get("title")) or "A listing"
        facts = " · ".join(
            _s(listing.get(k)) for k in ("brand", "size", "condition") if _s(listing.get(k))
        )
    elif niche:
        title = _s(niche.get("label")) or "A niche"
        facts = ""
    elif kind == "monitor.error":
        title = _s(monitor.get("label")) or "A monitor"
        facts = _s(monitor.get("status"))
    else:
        title = _s(payload.get("message")) or LABELS.get(kind, "Alert")
        facts = ""
    reason = _s(payload.get("reason"))
    if kind == "monitor.error":
        reason = _s(monitor.get("explanation")) or _s(monitor.get("last_error")) or reason
    return _Alert(
        kind=kind,
        label=LABELS.get(kind, kind or "Alert"),
        monitor=_s(monitor.get("label")),
        title=title,
        url=_link(listing.get("url")) or _link(monitor.get("url")),
        photo=_link(listing.get("photo_url")),
        price=price or None,
        facts=facts,
        niche=_s(niche.get("label")) if listing else "",  # a niche alert's title is its label
        reason=reason,
        created_at=_s(payload.get("created_at")) or None,
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def _more(count: int) -> str:
    return f"… and {count} more"


# -- Telegram (HTML parse mode) ---------------------------------------------------------------


def _esc(text: str, limit: int) -> str:
    # Clipped before escaping, so an entity is never cut in half.
    return html.escape(_clip(text, limit), quote=True)


def _telegram_block(alert: _Alert) -> str:
    head = f"<b>{_esc(alert.label, 40)}</b>"
    if alert.monitor:
        head += f" · {_esc(alert.monitor, 80)}"
    title = _esc(alert.title, 200)
    if alert.url:
        title = f'<a href="{html.escape(alert.url, quote=True)}">{title}</a>'
    lines = [head, title]
    line = " · ".join(_esc(p, 150) for p in (alert.price or "", alert.facts) if p)
    if line:
        lines.append(line)
    if alert.reason:
        lines.append(f"<i>{_esc(alert.reason, 400)}</i>")
    return "\n".join(lines)


def telegram_fit(payloads: Sequence[Mapping[str, Any]], *, limit: int = TELEGRAM_LIMIT) -> int:
    """How many of `payloads`, from the first, one message holds whole: the sender sends
    those and leaves the rest for the next message, so no alert is only "… and N more".
    At least one (an alert too long for a message on its own is clipped)."""
    used = 0
    for index, payload in enumerate(payloads):
        used += len(_telegram_block(_alert(payload))) + (2 if index else 0)
        if used > limit:
            return max(1, index)
    return len(payloads)


def telegram_text(payloads: Sequence[Mapping[str, Any]], *, limit: int = TELEGRAM_LIMIT) -> str:
    """One `sendMessage` text (parse_mode HTML) listing the alerts, at most `limit` characters
    (counted before entity parsing, so it holds after too)."""
    blocks = [_telegram_block(_alert(p)) for p in payloads]
    if not blocks:
        return "(no alerts)"
    reserve = len("\n\n" + _more(len(blocks)))
    text = ""
    for index, block in enumerate(blocks):
        candidate = f"{text}\n\n{block}" if text else block
        remaining = len(blocks) - index - 1
        if len(candidate) > limit - (reserve if remaining else 0):
            text = f"{text}\n\n{_more(len(blocks) - index)}" if text else _more(len(blocks))
            return text[:limit]
        text = candidate
    return text


# -- Discord (webhook execute) ----------------------------------------------------------------


def _embed(alert: _Alert, budget: int) -> dict[str, Any]:
    """One embed whose counted characters stay within `budget`."""
    title = _clip(alert.title, min(DISCORD_TITLE, budget // 4))
    footer = _clip(" · ".join(p for p in (alert.label, alert.monitor) if p), 100)
    pairs = [("Price", alert.price or ""), ("Niche", alert.niche or alert.facts)]
    fields: list[dict[str, Any]] = [
        {"name": name, "value": _clip(value, 200), "inline": True} for name, value in pairs if value
    ]
    used = len(title) + len(footer) + sum(len(f["name"]) + len(f["value"]) for f in fields)
    embed: dict[str, Any] = {"title": title, "footer": {"text": footer}}
    room = min(DISCORD_DESCRIPTION, budget - used)
    if alert.reason and room > 20:
        embed["description"] = _clip(alert.reason, room)
    if fields:
        embed["fields"] = fields
    if alert.url:
        embed["url"] = alert.url
    if alert.photo:
        embed["thumbnail"] = {"url": alert.photo}
    if alert.kind in _COLOURS:
        embed["color"] = _COLOURS[alert.kind]
    if alert.created_at:
        embed["timestamp"] = alert.created_at
    return embed


def discord_characters(embed: Mapping[str, Any]) -> int:
    """The characters Discord counts towards its 6000 per message."""
    count = len(embed.get("title", "")) + len(embed.get("description", ""))
    count += len(_d(embed.get("footer")).get("text", "")) + len(
        _d(embed.get("author")).get("name", "")
    )
    for item in embed.get("fields", ()):
        count += len(item.get("name", "")) + len(item.get("value", ""))
    return count


def discord_message(payloads: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The JSON body of one webhook execution: up to ten embeds within 6000 characters, and
    "… and N more" as content when the batch is larger. Nobody is ever pinged."""
    alerts = [_alert(p) for p in payloads]
    shown = alerts[:DISCORD_EMBEDS]
    budget = DISCORD_TOTAL // max(1, len(shown))
    message: dict[str, Any] = {
        "embeds": [_embed(alert, budget) for alert in shown],
        "allowed_mentions": {"parse": []},
    }
    if len(alerts) > len(shown):
        message["content"] = _more(len(alerts) - len(shown))
    return message


# -- e-mail ----------------------------------------------------------------------------------


def email_text(payloads: Sequence[Mapping[str, Any]]) -> MailText:
    """Subject and plain-text body: one alert, or a digest listing every alert of the batch."""
    alerts = [_alert(p) for p in payloads]
    monitors = {a.monitor for a in alerts if a.monitor}
    if len(alerts) == 1:
        subject = f"{alerts[0].label}: {alerts[0].title}"
    else:
        subject = f"{len(alerts)} alerts"
        if len(monitors) == 1:
            subject += f" from {next(iter(monitors))}"
    sections = []
    for alert in alerts:
        lines = [f"{alert.label}" + (f" — {alert.monitor}" if alert.monitor else ""), alert.title]
        detail = " · ".join(p for p in (alert.price or "", alert.facts) if p)
        lines += [x for x in (detail, alert.reason, alert.url or "") if x]
        sections.append("\n".join(lines))
    footer = (
        "You receive this because a notification rule of your Nichescope workspace matched.\n"
        "Rules and channels can be changed in the workspace's notification settings."
    )
    body = "\n\n----\n\n".join(sections) + "\n\n-- \n" + footer + "\n"
    return MailText(subject=_clip(f"Nichescope · {subject}", 180), body=body)


# -- webhook -----------------------------------------------------------------------------------


def webhook_body(payload: Mapping[str, Any] | str | bytes) -> bytes:
    """The bytes to POST and sign: the stored payload as it was stored (text or bytes), or a
    mapping serialised compactly; these exact bytes are signed, nothing is re-encoded after."""
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, str):
        return payload.encode()
    return json.dumps(dict(payload), ensure_ascii=False, separators=(",", ":")).encode()
