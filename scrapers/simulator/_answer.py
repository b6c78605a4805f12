"""One HTTP answer of the simulator, before the ASGI layer writes it (shared by both profiles)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Answer:
    """Mutable on purpose: the truncation fault cuts `body` after the handler built it."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: list[tuple[str, str]] = field(default_factory=list)


def json_answer(status: int, data: Any, headers: list[tuple[str, str]] | None = None) -> Answer:
    return Answer(status, json.dumps(data).encode(), "application/json", headers or [])


def not_found_104() -> Answer:
    """What today's site answers on a path it dropped (the legacy catalogue since 2026-09)."""
    return json_answer(404, {"code": 104, "message_code": "not_found", "message": "Not found"})


def access_denied_106() -> Answer:
    """The detail API's refusal of one request: JSON, not the bot-protection block page."""
    return json_answer(
        403,
        {"code": 106, "message_code": "access_denied",
         "message": "You are not allowed to access this resource"},
    )  # fmt: skip
