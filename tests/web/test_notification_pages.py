"""The alert pages in Chromium: channels (add, secret once, test, turn off and on), a
monitor's alert rules, the monitor page's alert panel; plus CSRF and workspace refusals over
plain HTTP. Screenshots go to the test's tmp dir (`notify-*.png`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

import trio

from api.web._filters import CHANNEL_HEALTH, channel_health
from store.notify.records import ChannelHealth
from tests.api.helpers import start_trial
from tests.api.notify_receiver import start_receiver
from tests.conftest import ServiceClient
from tests.web.conftest import InBrowser, StartWeb
from tests.web.test_pages import csrf_of, sign_in

URL = "https://www.vinted.fr/catalog?catalog[]=1904"
TRIAL = {"trial": {"active_monitors": 5, "runs_per_day": 5, "items_per_run": 50,
                   "min_poll_seconds": 1}}  # fmt: skip


async def _owner_with_monitor(client: ServiceClient) -> str:
    email = await sign_in(client)
    await start_trial(client, email)
    started = await client.post("/api/monitoring/start", json={"url": URL, "label": "Levi's"})
    assert started.status_code == 202, started.text
    return str(started.json()["id"])


async def test_channels_and_rules_in_the_browser(
    start_web: StartWeb, in_browser: InBrowser[Any], nursery: Any, tmp_path: Path
) -> None:
    receiver = await start_receiver(nursery)
    service = await start_web(plan_quotas=TRIAL, outbound_allow=(receiver.origin,))
    base = service.url
    async with service.client() as client:
        monitor_id = await _owner_with_monitor(client)
        cookie = client.cookies["session_token"]

    def shot(page: Any, name: str) -> None:
        page.screenshot(path=str(tmp_path / f"notify-{name}.png"), full_page=True)

    def scenario(page: Any) -> None:
        page.context.add_cookies([{"name": "session_token", "value": cookie, "url": base}])
        page.goto(f"{base}/dashboard")
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Alerts").click()
        page.wait_for_url(f"{base}/notifications")
        assert page.get_by_text("No channels yet").is_visible()
        shot(page, "empty")

        # A webhook: its signing secret is shown once.
        page.locator("[data-add-kind=webhook] summary").click()
        form = page.locator("[data-add-kind=webhook]")
        form.get_by_label("Name").fill("Shop hook")
        form.get_by_label("Endpoint URL").fill(f"{receiver.origin}/hooks/secretpath42")
        form.get_by_role("button", name="Add Webhook channel").click()
        secret = page.get_by_label("Signing secret", exact=True).input_value()
        assert secret.startswith("whsec_")
        assert page.get_by_text("Copy this secret now.").is_visible()
        shot(page, "secret-once")
        page.goto(f"{base}/notifications")
        assert secret not in page.content() and "secretpath42" not in page.content()

        # Refusals in words, the form kept open.
        page.locator("[data-add-kind=webhook] summary").click()
        form.get_by_label("Name").fill("Sneaky")
        form.get_by_label("Endpoint URL").fill("https://169.254.169.254/latest/meta-data")
        form.get_by_role("button", name="Add Webhook channel").click()
        assert page.get_by_text(re.compile("refused", re.I)).first.is_visible()
        shot(page, "refused")
        page.goto(f"{base}/notifications")
        page.locator("[data-add-kind=telegram] summary").click()
        tg = page.locator("[data-add-kind=telegram]")
        tg.get_by_label("Name").fill("Phone")
        tg.get_by_label("Bot token").fill("123456789:" + "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw")
        tg.get_by_label("Chat id").fill("12345")
        tg.get_by_role("button", name="Add Telegram channel").click()
        page.wait_for_url(re.compile(r"/notifications\?notice=added"))

        # Send a test: the result in words, and the log.
        page.get_by_role("button", name="Send a test to Shop hook").click()
        assert page.locator("[data-test-result]").inner_text().count("Delivered") == 1
        assert len(receiver.requests) == 1
        log = page.locator("#deliveries")
        assert "A test" in log.inner_text() and "Delivered" in log.inner_text()
        shot(page, "tested")
        page.get_by_role("button", name="Turn off Phone").click()
        page.wait_for_url(re.compile(r"notice=disabled"))
        assert (
            page.get_by_role("row", name=re.compile("Phone")).get_by_text("Turned off").is_visible()
        )
        page.get_by_role("button", name="Turn on Phone").click()
        page.wait_for_url(re.compile(r"notice=enabled"))

        # The monitor's rules.
        page.goto(f"{base}/monitors/{monitor_id}")
        alerts = page.locator("#alerts")
        assert "No alerts" in alerts.inner_text() and "Shop hook" in alerts.inner_text()
        pills = alerts.locator(".channel-line > .state").all_inner_texts()
        assert sorted(pills) == ["Not used yet", "Working"], pills
        alerts.get_by_role("link", name="Set up alerts").click()
        page.wait_for_url(f"{base}/monitors/{monitor_id}/alerts")
        shot(page, "rules")
        page.get_by_label(re.compile("Price drops:")).check()
        page.get_by_label("Lowest price").fill("50")
        page.get_by_label("Highest price").fill("10")
        page.get_by_label("Brands").fill("Levi's, Carhartt")
        page.get_by_role("button", name="Save alerts").click()
        page.get_by_text("not below the lowest price").wait_for()
        shot(page, "rules-error")
        page.get_by_label("Highest price").fill("60")
        page.get_by_label(re.compile("Deal: asking at most")).fill("60")
        page.get_by_label(re.compile("Shop hook")).check()
        page.get_by_label(re.compile("Daily digest:")).check()
        page.get_by_label("Quiet from").fill("22:00")
        page.get_by_label("Quiet until").fill("07:00")
        page.get_by_label("Time zone").fill("Europe/Paris")
        page.get_by_role("button", name="Save alerts").click()
        page.wait_for_url(re.compile(r"/alerts\?notice=saved"))
        assert page.get_by_label("Brands").input_value() == "Levi's, Carhartt"
        assert page.get_by_label(re.compile("Price drops:")).is_checked()
        assert page.get_by_label("Time zone").input_value() == "Europe/Paris"
        shot(page, "rules-saved")
        page.goto(f"{base}/monitors/{monitor_id}")
        text = page.locator("#alerts").inner_text()
        assert "1 rule of its own" in text and "daily digest" in text
        shot(page, "monitor")

        page.set_viewport_size({"width": 390, "height": 844})
        for path in ("/notifications", f"/monitors/{monitor_id}/alerts"):
            page.goto(f"{base}{path}")
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), path
        shot(page, "rules-phone")
        # On a phone the monitor's channels keep their pills one line high beside a name and
        # address on two lines (stretched to the row, a pill was a tall lozenge).
        page.goto(f"{base}/monitors/{monitor_id}")
        for box in (p.bounding_box() for p in page.locator(".channel-line > .state").all()):
            assert box is not None and box.get("height", 99) < 30, box
        page.goto(f"{base}/notifications")
        shot(page, "phone")

    await in_browser(scenario)


async def test_forms_refuse_bad_tokens_and_other_workspaces(start_web: StartWeb) -> None:
    service = await start_web(plan_quotas=TRIAL)
    async with service.client() as owner, service.client() as stranger:
        monitor_id = await _owner_with_monitor(owner)
        await sign_in(stranger)
        token = csrf_of((await owner.get("/notifications")).text)
        made = await owner.post(
            "/notifications/channels",
            data={"csrf_token": token, "kind": "email", "name": "Me", "email": "me@example.com"},
        )
        assert made.status_code == 303, made.text
        channel_id = (await owner.get("/api/notifications/channels")).json()["channels"][0]["id"]
        posts = [
            ("/notifications/channels", {"kind": "email", "name": "x", "email": "a@b.co"}),
            (f"/notifications/channels/{channel_id}/test", {}),
            (f"/notifications/channels/{channel_id}/send-confirmation", {}),
            (f"/notifications/channels/{channel_id}/disable", {}),
            (f"/notifications/channels/{channel_id}/delete", {}),
            (f"/monitors/{monitor_id}/alerts", {"kinds": "deal"}),
        ]
        for path, data in posts:
            for sent in ({}, {"csrf_token": "forged"}):
                answer = await owner.post(path, data={**data, **sent})
                assert answer.status_code == 403, (path, answer.status_code)
        theirs = csrf_of((await stranger.get("/notifications")).text)
        for path, data in posts[1:]:
            answer = await stranger.post(path, data={**data, "csrf_token": theirs})
            assert answer.status_code == 404, (path, answer.status_code)
        assert (await stranger.get(f"/monitors/{monitor_id}/alerts")).status_code == 404
        channels = (await owner.get("/api/notifications/channels")).json()["channels"]
        assert [c["enabled"] for c in channels] == [True]
        assert (await owner.get("/api/notifications/rules")).json()["rules"] == []
        alias = await owner.get("/app/notifications")
        assert alias.status_code == 303 and alias.headers["location"] == "/notifications"


async def test_the_alerts_page_lists_what_was_sent_and_why(
    start_web: StartWeb, nursery: Any, market: Any
) -> None:
    receiver = await start_receiver(nursery)
    service = await start_web(
        plan_quotas=TRIAL, outbound_allow=(receiver.origin,), min_poll_seconds=1
    )
    market.list(1, "40.00")
    async with service.client() as client:
        email = await sign_in(client)
        await start_trial(client, email)
        started = await client.post(
            "/api/monitoring/start", json={"url": URL, "label": "Levi's", "interval_seconds": 1}
        )
        assert started.status_code == 202, started.text
        monitor_id = started.json()["id"]
        made = await client.post(
            "/api/notifications/channels",
            json={"kind": "webhook", "name": "Shop hook", "url": f"{receiver.origin}/hook"},
        )
        assert made.status_code == 201, made.text
        rule = {"name": "Everything new", "kinds": ["new_listing"], "monitor_id": monitor_id}
        assert (await client.post("/api/notifications/rules", json=rule)).status_code == 201
        with trio.fail_after(60):  # the bootstrap poll: nothing is news yet
            while (await client.get(f"/api/monitoring/{monitor_id}")).json()["status"] != "active":
                await trio.sleep(0.1)
        market.list(2, "12.50")
        with trio.fail_after(60):
            while not receiver.requests:
                await trio.sleep(0.1)
        html = (await client.get("/notifications")).text
    section = html.split('id="alerts"', 1)[1].split("</section>", 1)[0]
    assert "New listing" in section and "Listing 2" in section
    assert "new at 12.50; the price book holds no sale of this niche" in section
    assert "Shop hook" in section and "Sent" in section


def test_every_channel_health_has_its_words_and_colour() -> None:
    """Both pages draw a channel's health through one filter; a health without words was a
    blank pill on the monitor page (an unconfirmed address)."""
    assert set(CHANNEL_HEALTH) == set(get_args(ChannelHealth))
    assert all(words and colour for words, colour in CHANNEL_HEALTH.values())
    assert channel_health("unconfirmed") == ("Waiting for its recipient", "queued")
    assert channel_health("something new") == ("something new", "queued")
