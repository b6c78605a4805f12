"""What a new channel's destination must look like, per kind, as the OpenAPI document says it.

`CreateChannelRequest` is one body for every kind; its `oneOf` makes it a union discriminated
by `kind`: each branch names the fields its kind needs (strings, of the shape the engine's
checks in `engine/notifications/_destinations.py` take) and nulls the other kinds' fields.
So a request the document admits is refused only where no schema can say why: a webhook
whose host does not resolve to a public address (a DNS look-up, 422 `destination_refused`).

The Discord and webhook URLs depend on `Settings.outbound_allow` (origins the guard lets
through, plain http included), so `openapi_rules` states them again with the configured
ones when the document is built; the model's own schema names none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from api.http.email_address import EMAIL_SCHEMA
from engine.notifications import DISCORD_HOSTS

_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
# A last label starting with a letter: no IP literal, no number in disguise (`0x7f.1`).
_HOST = f"(?:{_LABEL}\\.)+[A-Za-z](?:[A-Za-z0-9-]{{0,61}}[A-Za-z0-9])?"
# Ports 1 to 65535.
_PORTS = ("[1-9][0-9]{0,3}", "[1-5][0-9]{4}", "6[0-4][0-9]{3}", "65[0-4][0-9]{2}",
          "655[0-2][0-9]", "6553[0-5]")  # fmt: skip
_PORT = "(?::(?:" + "|".join(_PORTS) + "))?"
# RFC 3986 path and query characters; never a `#fragment` (never sent), nor whitespace.
_PATH = "(?:/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?"
_QUERY = "(?:\\?[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?"
DISCORD_PATH = "/api/webhooks/[0-9]{1,25}/[A-Za-z0-9_-]{20,200}/?"
TELEGRAM_TOKEN = "^[0-9]{3,20}:[A-Za-z0-9_-]{30,100}$"
# A chat id: a number (negative for groups; 18 digits always fit the signed 64 bits it must)
# or a public channel's @name.
TELEGRAM_CHAT = "^(?:-?[0-9]{1,18}|@[A-Za-z][A-Za-z0-9_]{3,31})$"
DESTINATION_FIELDS = ("url", "email", "bot_token", "chat_id")


def _origins(allow: Iterable[str]) -> list[str]:
    return [re.escape(origin.rstrip("/")) for origin in allow]


def webhook_url_pattern(allow: Iterable[str] = ()) -> str:
    """https on a host name (not an address, at least two labels), or an allowlisted origin."""
    origins = "|".join([f"https://{_HOST}{_PORT}", *_origins(allow)])
    return f"^(?:{origins}){_PATH}{_QUERY}$"


def discord_url_pattern(allow: Iterable[str] = ()) -> str:
    """Discord's own webhook URLs (or an allowlisted origin with their path), no query."""
    hosts = "|".join(re.escape(host) for host in sorted(DISCORD_HOSTS))
    origins = "|".join([f"https://(?:{hosts})(?::443)?", *_origins(allow)])
    return f"^(?:{origins}){DISCORD_PATH}$"


def _text(pattern: str, max_length: int) -> dict[str, Any]:
    return {"type": "string", "pattern": pattern, "maxLength": max_length}


def destination_fields(allow: Iterable[str] = ()) -> dict[str, dict[str, dict[str, Any]]]:
    """Per kind, the schema of each field it needs."""
    allowed = tuple(allow)
    return {
        "email": {"email": EMAIL_SCHEMA},
        "webhook": {
            "url": {
                **_text(webhook_url_pattern(allowed), 2048),
                "description": "A public https address; refused (422) when its host does not "
                "resolve to public addresses only.",
            }
        },
        "discord": {"url": _text(discord_url_pattern(allowed), 2048)},
        "telegram": {
            "bot_token": _text(TELEGRAM_TOKEN, 200),
            "chat_id": _text(TELEGRAM_CHAT, 100),
        },
    }


def kind_branches(allow: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The `oneOf` of `CreateChannelRequest`: one branch per kind, `kind` its discriminator."""
    branches = []
    for kind, needed in destination_fields(allow).items():
        others = {f: {"type": "null"} for f in DESTINATION_FIELDS if f not in needed}
        branches.append(
            {
                "title": f"{kind.capitalize()}Channel",
                "properties": {"kind": {"const": kind}, **needed, **others},
                "required": ["kind", *needed],
            }
        )
    return branches
