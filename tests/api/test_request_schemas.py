"""The request bodies' schemas state what the service takes (#33 item 10), as
tests/api/test_catalogue_url_schema.py shows for catalogue URLs: every value a documented
pattern admits passes the service's own check (but a webhook host's DNS look-up, which no
schema can state), and what the service refuses for its shape the schema refuses too.

E-mail addresses (accounts, trials, e-mail channels), each channel kind's destination (the
`oneOf` of `CreateChannelRequest`, discriminated by `kind`), a rule's channel ids.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from api.http.email_address import EMAIL_PATTERN, EMAIL_SCHEMA, Email
from api.notifications.channel_schema import (
    TELEGRAM_CHAT,
    TELEGRAM_TOKEN,
    discord_url_pattern,
    kind_branches,
    webhook_url_pattern,
)
from api.notifications.schemas import (
    ID_PATTERN,
    NEEDS,
    VISIBLE,
    CreateChannelRequest,
    MonitorRule,
)
from engine.notifications import DestinationRefused
from engine.notifications._destinations import (
    check_discord_url,
    check_email_address,
    check_telegram_chat,
    check_telegram_token,
    check_webhook_url_syntax,
)
from tests.api.helpers import register
from tests.conftest import RunningService

HYPOTHESIS_SEED = 33  # seeded: the same examples every run
EXAMPLES = settings(
    max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
ALLOW = ("http://127.0.0.1:8765",)  # an allowlisted origin, as tests and demos configure
EMAILS = TypeAdapter(Email)


def _admitted(schema: dict[str, Any], value: object) -> bool:
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    return jsonschema.Draft202012Validator(schema, format_checker=checker).is_valid(value)


def _address(value: str) -> bool:
    return _admitted(EMAIL_SCHEMA, value)


@seed(HYPOTHESIS_SEED)
@EXAMPLES
@given(st.from_regex(EMAIL_PATTERN, fullmatch=True).filter(_address))
def test_every_address_the_schema_admits_is_taken(address: str) -> None:
    EMAILS.validate_python(address)
    check_email_address(address)


@pytest.mark.parametrize(
    "address",
    [
        "someone@example.test",  # special-use domains: no mail reaches them
        "someone@shop.LOCAL",
        "someone@printer.localhost",
        "someone@x.invalid",
        "someone@hidden.onion",
        "someone@in-addr.arpa",
        "someone@ab--cd.com",  # an R-LDH label that is no Punycode
        "someone@example.42",  # no top-level domain ends with a digit
        "someone@localhost",
        "some..one@example.com",
        '"some one"@example.com',
        "l" * 65 + "@example.com",  # RFC 5321's 64 characters before the @
    ],
)
def test_what_the_service_refuses_the_schema_refuses(address: str) -> None:
    assert not _address(address)
    with pytest.raises(ValidationError):
        EMAILS.validate_python(address)
    with pytest.raises(DestinationRefused):
        check_email_address(address)


def test_ordinary_addresses_are_admitted() -> None:
    for address in ("someone@example.com", "first.last+tag@mail.example.co.uk", "a@b.io"):
        assert _address(address)
        EMAILS.validate_python(address)


@seed(HYPOTHESIS_SEED)
@EXAMPLES
@given(st.from_regex(webhook_url_pattern(ALLOW), fullmatch=True))
def test_every_webhook_url_the_schema_admits_passes_the_static_guard(url: str) -> None:
    check_webhook_url_syntax(url, ALLOW)  # then only its DNS look-up may refuse it


@seed(HYPOTHESIS_SEED)
@EXAMPLES
@given(st.from_regex(discord_url_pattern(ALLOW), fullmatch=True))
def test_every_discord_url_the_schema_admits_is_taken(url: str) -> None:
    check_discord_url(url, ALLOW)


@seed(HYPOTHESIS_SEED)
@EXAMPLES
@given(st.from_regex(TELEGRAM_TOKEN, fullmatch=True), st.from_regex(TELEGRAM_CHAT, fullmatch=True))
def test_every_telegram_destination_the_schema_admits_is_taken(token: str, chat: str) -> None:
    check_telegram_token(token)
    check_telegram_chat(chat)


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.example.com/in",  # https only, but for an allowlisted origin
        "https://10.0.0.1/in",  # addresses only as an allowlisted origin
        "https://0x7f.1/in",
        "https://intranet/in",  # a single label resolves through search domains
        "https://user@hooks.example.com/in",
        "https://hooks.example.com/in#top",
        "https://hooks.example.com/in put",
        "ftp://hooks.example.com/in",
    ],
)
def test_webhook_urls_the_guard_refuses_the_schema_refuses(url: str) -> None:
    assert not _admitted({"pattern": webhook_url_pattern(ALLOW)}, url)
    with pytest.raises(DestinationRefused):
        check_webhook_url_syntax(url, ALLOW)


@pytest.mark.parametrize(
    "url",
    [
        "https://discord.com/api/webhooks/123/short",
        "https://discord.com/api/webhooks/123/" + "t" * 30 + "?wait=true",
        "https://evil.example/api/webhooks/123/" + "t" * 30,
        "http://discord.com/api/webhooks/123/" + "t" * 30,
    ],
)
def test_discord_urls_refused_are_not_admitted(url: str) -> None:
    assert not _admitted({"pattern": discord_url_pattern(ALLOW)}, url)
    with pytest.raises(DestinationRefused):
        check_discord_url(url, ALLOW)


def test_the_union_is_discriminated_by_kind_as_the_model_checks() -> None:
    branches = {b["properties"]["kind"]["const"]: b for b in kind_branches()}
    assert {kind: tuple(b["required"][1:]) for kind, b in branches.items()} == NEEDS
    schema = CreateChannelRequest.model_json_schema()
    good = {
        "email": {"email": "someone@example.com"},
        "webhook": {"url": "https://hooks.example.com/in"},
        "discord": {"url": "https://discord.com/api/webhooks/1/" + "t" * 40},
        "telegram": {"bot_token": "123456:" + "A" * 35, "chat_id": "-100123"},
    }
    for kind, fields in good.items():
        body = {"kind": kind, "name": "n", **fields}
        assert _admitted(schema, body), body
        CreateChannelRequest.model_validate(body)
        # A needed field null, or another kind's field given: refused by both.
        for wrong in (
            {**body, next(iter(fields)): None},
            {**body, "chat_id" if kind != "telegram" else "url": "x"},
        ):
            assert not _admitted(schema, wrong), wrong
            with pytest.raises(ValidationError):
                CreateChannelRequest.model_validate(wrong)


@seed(HYPOTHESIS_SEED)
@EXAMPLES
@given(st.lists(st.from_regex(ID_PATTERN, fullmatch=True).filter(lambda i: len(i) <= 64)))
def test_every_channel_id_the_schema_admits_is_taken(ids: list[str]) -> None:
    schema = MonitorRule.model_json_schema()["properties"]["channel_ids"]
    assert _admitted(schema, ids[:20])
    rule = MonitorRule.model_validate({"name": "r", "kinds": ["deal"], "channel_ids": ids[:20]})
    assert rule.channel_ids == list(dict.fromkeys(ids[:20]))
    for wrong in ("../etc", "chn_" + "x" * 61, "CHN_1"):
        assert not _admitted(schema, [wrong])
        with pytest.raises(ValidationError):
            MonitorRule.model_validate({"name": "r", "kinds": ["deal"], "channel_ids": [wrong]})


async def test_the_longest_address_registers_and_the_document_has_the_poll_floor(
    service: RunningService,
) -> None:
    """Schemathesis found both: a 254-character address named a workspace its 200-character
    column could not hold (500); an interval under the service's floor was a 400 the document
    did not state."""
    longest = "l" * 64 + "@" + ".".join(["d" * 60] * 3) + ".exampl"
    assert len(longest) == 254 and _address(longest)
    async with service.client() as client:
        await register(client, longest)
        document = (await client.get("/openapi.json")).json()
    interval = document["components"]["schemas"]["StartMonitorRequest"]["properties"]
    (whole,) = [b for b in interval["interval_seconds"]["anyOf"] if b["type"] == "integer"]
    assert whole["minimum"] == service.settings.min_poll_seconds


def test_a_whole_hour_written_as_a_number_is_taken() -> None:
    """JSON Schema's `integer` admits 16.0; the strict rule model took only 16."""
    rule = {"name": "r", "kinds": ["deal"]}
    assert MonitorRule.model_validate({**rule, "digest_hour": 16.0}).digest_hour == 16
    for wrong in (16.5, "16", True):
        with pytest.raises(ValidationError):
            MonitorRule.model_validate({**rule, "digest_hour": wrong})


@seed(HYPOTHESIS_SEED)
@EXAMPLES
@given(st.from_regex(VISIBLE, fullmatch=True).filter(lambda n: len(n) <= 100))
def test_every_name_the_schema_admits_is_taken(name: str) -> None:
    MonitorRule.model_validate({"name": name, "kinds": ["deal"]})
    CreateChannelRequest.model_validate({"kind": "email", "name": name, "email": "a@b.io"})


@pytest.mark.parametrize("name", ["   ", "a\x00", "\x1c", "\ufeff", " \x85 "])
def test_names_refused_are_not_admitted(name: str) -> None:
    """Schemathesis found a rule named with a NUL refused: `\\S` alone let it through."""
    schema = MonitorRule.model_json_schema()["properties"]["name"]
    assert not _admitted(schema, name)
    with pytest.raises(ValidationError):
        MonitorRule.model_validate({"name": name, "kinds": ["deal"]})
