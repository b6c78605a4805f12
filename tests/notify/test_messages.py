"""What each channel says about a batch, within the channel's limits, untrusted text tamed."""

from __future__ import annotations

import json
from typing import Any

from engine.notifications import discord_message, email_text, telegram_text, webhook_body
from tests.notify.wire_rules import discord_form_errors, telegram_visible_text


def deal(n: int, *, title: str | None = None, reason: str = "asks €12.00, 52% under") -> dict:
    return {
        "type": "listing.deal",
        "version": 1,
        "id": f"ntf_{n}",
        "created_at": "2026-11-26T05:01:02Z",
        "monitor": {"id": "mon_1", "label": "Levi's jeans", "url": "https://market.example/c"},
        "rule": {"id": "rul_1", "name": "Cheap"},
        "listing": {
            "item_id": n,
            "title": title if title is not None else f"Levi's 501 W32 #{n}",
            "brand": "Levi's",
            "size": "W32",
            "condition": "Very good",
            "price": "12.00",
            "previous_price": "15.00",
            "currency": "EUR",
            "url": f"https://market.example/items/{n}",
            "photo_url": f"https://img.example/{n}.jpg",
        },
        "niche": {"label": "Men › Jeans · Levi's · W32 · Very good", "sold": 14},
        "reason": reason,
    }


HOSTILE = '<script>alert("x")</script> & <b>bold</b> @everyone'


def test_telegram_escapes_user_text_and_telegram_can_parse_it() -> None:
    text = telegram_text([deal(1, title=HOSTILE)])
    assert "<script>" not in text and "&lt;script&gt;" in text
    visible = telegram_visible_text(text)  # raises where Telegram would answer 400
    assert HOSTILE in visible
    assert '<a href="https://market.example/items/1">' in text
    assert "€12.00 (was €15.00)" in visible


def test_telegram_never_links_anything_but_http() -> None:
    payload = deal(1)
    payload["listing"]["url"] = 'javascript:alert(1)"'
    payload["monitor"]["url"] = "data:text/html,x"
    assert "href" not in telegram_text([payload])


def test_a_large_telegram_batch_stays_within_4096_and_says_how_many_more() -> None:
    batch = [deal(n, title="T" * 300, reason="R" * 600) for n in range(60)]
    text = telegram_text(batch)
    assert len(text) <= 4096
    shown = text.count("<b>Deal</b>")
    assert 1 <= shown < 60
    assert text.endswith(f"… and {60 - shown} more")
    telegram_visible_text(text)
    # One alert whose every field is at its worst still fits (escaping grows & to &amp;).
    worst = telegram_text([deal(1, title="&" * 5000, reason="<" * 5000)])
    assert len(worst) <= 4096 and "<b>Deal</b>" in worst


def test_discord_sends_at_most_ten_embeds_within_discords_limits() -> None:
    batch = [deal(n, title="T" * 400, reason="R" * 5000) for n in range(13)]
    message = discord_message(batch)
    assert len(message["embeds"]) == 10
    assert message["content"] == "… and 3 more"
    assert discord_form_errors(message) == []
    first = message["embeds"][0]
    assert len(first["title"]) <= 256 and first["url"] == "https://market.example/items/0"
    assert first["thumbnail"] == {"url": "https://img.example/0.jpg"}
    assert {f["name"] for f in first["fields"]} == {"Price", "Niche"}


def test_discord_text_can_never_ping_anyone() -> None:
    message = discord_message([deal(1, title=HOSTILE)])
    assert message["allowed_mentions"] == {"parse": []}
    assert "content" not in message  # user text only in embeds, which never ping either
    single = discord_message([deal(1, reason="R" * 5000)])["embeds"][0]
    assert len(single["description"]) <= 4096 and discord_form_errors({"embeds": [single]}) == []


def test_email_subject_has_no_line_breaks_and_a_digest_lists_all() -> None:
    one = email_text([deal(1, title="Jeans\r\nBcc: victim@example.com")])
    assert "\n" not in one.subject and "\r" not in one.subject
    assert one.subject.startswith("Nichescope · Deal: Jeans")
    digest = email_text([deal(n) for n in range(5)])
    assert digest.subject == "Nichescope · 5 alerts from Levi's jeans"
    for n in range(5):
        assert f"https://market.example/items/{n}" in digest.body


def test_niche_and_error_alerts_render_without_a_listing() -> None:
    niche: dict[str, Any] = {
        "type": "niche.new_hot",
        "monitor": {"label": "Jeans"},
        "niche": {"label": "Men › Jeans · Levi's"},
        "reason": "sells in 2 days",
    }
    error: dict[str, Any] = {
        "type": "monitor.error",
        "monitor": {"label": "Jeans", "status": "error", "explanation": "blocked (403)"},
    }
    text = telegram_text([niche, error])
    assert "New hot niche" in text and "Monitor error" in text and "blocked (403)" in text
    assert discord_form_errors(discord_message([niche, error])) == []


def test_the_webhook_body_is_the_stored_payload() -> None:
    stored = '{"type":"listing.deal","id":"ntf_1","price":"12.00"}'
    assert webhook_body(stored) == stored.encode()
    assert json.loads(webhook_body(deal(1))) == deal(1)
