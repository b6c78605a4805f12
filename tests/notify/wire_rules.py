"""The destinations' own rules, as the fakes in `tests/notify_fakes.py` enforce them.

Telegram's HTML parse mode (only its tags; every `<`, `>` and `&` outside a tag escaped, or
"Bad Request: can't parse entities") and Discord's limits for a webhook execution (ten
embeds, 256-character titles, 4096-character descriptions, 6000 characters in all).
"""

from __future__ import annotations

import html
import re
from typing import Any

_TG_TAGS = frozenset(
    [
        "b",
        "strong",
        "i",
        "em",
        "u",
        "ins",
        "s",
        "strike",
        "del",
        "a",
        "code",
        "pre",
        "span",
        "tg-spoiler",
        "tg-emoji",
        "blockquote",
    ]
)
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[^<>]*)?)>")
_ENTITY = re.compile(r"&(lt|gt|amp|quot|#\d+|#x[0-9a-fA-F]+);")


class EntityError(ValueError):
    pass


def telegram_visible_text(text: str) -> str:
    """What Telegram shows of an HTML-mode text; `EntityError` where Telegram would answer
    "Bad Request: can't parse entities"."""
    out: list[str] = []
    stack: list[str] = []
    position = 0
    for match in _TAG.finditer(text):
        out.append(_data(text[position : match.start()], position))
        closing, name = match.group(1), match.group(2).lower()
        if name not in _TG_TAGS:
            raise EntityError(f'Unsupported start tag "{name}" at byte offset {match.start()}')
        if closing:
            if not stack or stack.pop() != name:
                raise EntityError(f"Unmatched end tag at byte offset {match.start()}")
        else:
            stack.append(name)
        position = match.end()
    out.append(_data(text[position:], position))
    if stack:
        raise EntityError(f'Can\'t find end tag corresponding to start tag "{stack[-1]}"')
    return "".join(out)


def _data(chunk: str, offset: int) -> str:
    if "<" in chunk or ">" in chunk:
        raise EntityError(f"Unexpected character at byte offset {offset + chunk.find('<')}")
    for index, char in enumerate(chunk):
        if char == "&" and not _ENTITY.match(chunk, index):
            raise EntityError(f"Unsupported entity at byte offset {offset + index}")
    return html.unescape(chunk)


def discord_form_errors(body: Any) -> list[str]:
    """Where Discord would answer 400 "Invalid Form Body" (50035) for a webhook execution."""
    if not isinstance(body, dict):
        return ["body: not a JSON object"]
    errors = []
    content = body.get("content") or ""
    embeds = body.get("embeds") or []
    if not content and not embeds:
        errors.append("Cannot send an empty message")
    if len(content) > 2000:
        errors.append("content: Must be 2000 or fewer in length.")
    if len(embeds) > 10:
        errors.append("embeds: Must be 10 or fewer in length.")
    total = 0
    for index, embed in enumerate(embeds):
        title, description = embed.get("title", ""), embed.get("description", "")
        if len(title) > 256:
            errors.append(f"embeds.{index}.title: Must be 256 or fewer in length.")
        if len(description) > 4096:
            errors.append(f"embeds.{index}.description: Must be 4096 or fewer in length.")
        fields = embed.get("fields", [])
        if len(fields) > 25:
            errors.append(f"embeds.{index}.fields: Must be 25 or fewer in length.")
        for item in fields:
            if len(item.get("name", "")) > 256 or len(item.get("value", "")) > 1024:
                errors.append(f"embeds.{index}.fields: a name or value is too long")
            total += len(item.get("name", "")) + len(item.get("value", ""))
        for key in ("url",):
            if key in embed and not str(embed[key]).startswith(("http://", "https://")):
                errors.append(f"embeds.{index}.{key}: Not a well formed URL.")
        total += len(title) + len(description) + len(embed.get("footer", {}).get("text", ""))
    if total > 6000:
        errors.append("embeds: Embed size exceeds maximum size of 6000")
    return errors
