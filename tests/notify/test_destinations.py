"""What users give as destinations: refused before anything is stored or sent, masked."""

from __future__ import annotations

import pytest

from engine.notifications import (
    DestinationRefused,
    check_destination,
    check_discord_url,
    check_telegram_chat,
    check_telegram_token,
    check_webhook_url,
    mask_email,
    mask_telegram,
    mask_webhook_url,
)

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"
DISCORD = "https://discord.com/api/webhooks/112233445566778899/" + "t" * 68


def resolving_to(*addresses: str):  # type: ignore[no-untyped-def]
    asked: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return list(addresses)

    resolve.asked = asked  # type: ignore[attr-defined]
    return resolve


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://hooks.example.com/in", "https"),
        ("ftp://hooks.example.com/in", "https"),
        ("https://user:pw@hooks.example.com/in", "userinfo"),
        ("https://hooks.example.com@evil.example/in", "userinfo"),
        ("https://127.0.0.1/in", "IP address"),
        ("https://10.0.0.8/in", "IP address"),
        ("https://[::1]/in", "IP address"),
        ("https://169.254.169.254/latest/meta-data", "IP address"),
        ("https://2130706433/in", "numeric host"),
        ("https://0x7f.1/in", "numeric host"),
        ("https://localhost/in", "single-label"),
        ("https://hooks.example.com/in#frag", "fragment"),
        ("https://hooks.example.com/in\n", "control"),
    ],
)
async def test_webhook_urls_refused_without_a_dns_lookup(url: str, reason: str) -> None:
    resolve = resolving_to("93.184.215.14")
    with pytest.raises(DestinationRefused, match=reason):
        await check_webhook_url(url, resolver=resolve)
    assert resolve.asked == []


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "non-public"),
        ("10.1.2.3", "non-public"),
        ("192.168.1.1", "non-public"),
        ("::1", "non-public"),
        ("169.254.169.254", "metadata"),
        ("::ffff:127.0.0.1", "non-public"),
    ],
)
async def test_webhook_hosts_resolving_to_private_addresses_are_refused(
    address: str, reason: str
) -> None:
    resolve = resolving_to("93.184.215.14", address)  # one bad answer among good ones
    with pytest.raises(DestinationRefused, match=reason):
        await check_webhook_url("https://hooks.example.com/in", resolver=resolve)
    assert resolve.asked == ["hooks.example.com"]


async def test_a_public_https_webhook_is_accepted_normalised() -> None:
    url = await check_webhook_url(
        "https://Hooks.Example.com:443/in?k=1", resolver=resolving_to("93.184.215.14")
    )
    assert url == "https://hooks.example.com/in?k=1"


async def test_allowlisted_loopback_origins_are_accepted_with_http_and_no_lookup() -> None:
    resolve = resolving_to("127.0.0.1")
    allow = ("http://127.0.0.1:8123",)
    url = await check_webhook_url("http://127.0.0.1:8123/hook", allow, resolver=resolve)
    assert url == "http://127.0.0.1:8123/hook"
    assert resolve.asked == []
    with pytest.raises(DestinationRefused):  # exactly that origin: another port is not it
        await check_webhook_url("http://127.0.0.1:8124/hook", allow, resolver=resolve)


@pytest.mark.parametrize(
    "url",
    [
        "https://discord.com/api/webhooks/1/abc",  # token too short
        "https://discord.com/api/webhooks/abc/" + "t" * 68,  # id not digits
        "https://discord.com/api/v10/webhooks/1/" + "t" * 68,
        "https://evil.example/api/webhooks/112233/" + "t" * 68,
        "https://discord.com.evil.example/api/webhooks/112233/" + "t" * 68,
        "http://discord.com/api/webhooks/112233/" + "t" * 68,
        "https://discord.com:8443/api/webhooks/112233/" + "t" * 68,
        DISCORD + "?thread_id=1",
        "https://u:p@discord.com/api/webhooks/112233/" + "t" * 68,
    ],
)
def test_discord_urls_other_than_discords_webhooks_are_refused(url: str) -> None:
    with pytest.raises(DestinationRefused):
        check_discord_url(url)


def test_discord_hosts_and_an_allowlisted_fake_are_accepted() -> None:
    for host in ("discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com"):
        url = f"https://{host}/api/webhooks/1122/" + "t" * 68
        assert check_discord_url(url + "/") == url
    fake = "http://127.0.0.1:9000/api/webhooks/1122/" + "t" * 68
    assert check_discord_url(fake, ("http://127.0.0.1:9000",)) == fake
    with pytest.raises(DestinationRefused):
        check_discord_url(fake)
    with pytest.raises(DestinationRefused):  # allowlisted origin, but not a webhook path
        check_discord_url("http://127.0.0.1:9000/admin", ("http://127.0.0.1:9000",))


def test_telegram_tokens_and_chat_ids() -> None:
    assert check_telegram_token(f" {TOKEN} ") == TOKEN
    for bad in ("", "123:short", "abc:" + "A" * 35, TOKEN + "!", "12:" + "A" * 35):
        with pytest.raises(DestinationRefused, match="BotFather"):
            check_telegram_token(bad)
    assert check_telegram_chat("-1001234567890") == -1001234567890
    assert check_telegram_chat(42) == 42
    assert check_telegram_chat("@my_channel") == "@my_channel"
    for bad in ("", "@a", "me", "12ab", True, "@bad-name"):
        with pytest.raises(DestinationRefused, match="chat id"):
            check_telegram_chat(bad)  # type: ignore[arg-type]


async def test_destinations_are_sealed_material_and_masked_hints() -> None:
    webhook = await check_destination(
        "webhook", {"url": "https://hooks.example.com/in/3f2a9b1c7d"},
        resolver=resolving_to("93.184.215.14"),
    )  # fmt: skip
    assert webhook.secrets["signing_secret"].startswith("whsec_")
    assert webhook.hint == "https://*.example.com/…1c7d"  # the host's registered name only
    telegram = await check_destination("telegram", {"bot_token": TOKEN, "chat_id": "12345"})
    assert telegram.secrets == {"bot_token": TOKEN, "chat_id": 12345}
    assert telegram.hint == "bot …saw1 · chat 12345"
    discord = await check_destination("discord", {"url": DISCORD})
    assert discord.hint == "discord webhook …/tttt"
    email = await check_destination("email", {"to": "Alice@Example.com"})
    assert email.secrets == {"to": "Alice@example.com"} and email.hint == "A***@example.com"
    for hint in (webhook.hint, telegram.hint, discord.hint):
        assert TOKEN not in hint and DISCORD not in hint
    with pytest.raises(DestinationRefused, match="unknown channel kind"):
        await check_destination("sms", {})
    with pytest.raises(DestinationRefused, match="e-mail"):
        await check_destination("email", {"to": "not an address"})


def test_masks_never_show_a_short_secret_whole() -> None:
    assert mask_webhook_url("https://hooks.example.com/abc") == "https://*.example.com/…"
    assert mask_telegram("1:abcd", 5) == "bot … · chat 5"
    assert mask_email("bob@example.com") == "b***@example.com"
