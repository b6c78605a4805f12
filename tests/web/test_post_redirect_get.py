"""Post/Redirect/Get (#32, item 10): every form that succeeds answers 303 See Other to a page
that renders 200, so the address bar never keeps the POST's address and a reload never sends
the form again; what a page shows once (a new key, a signing secret, a test's outcome) comes
through the sealed one-shot cookie of `api/web/flash.py`, in that browser only.

Over plain HTTP every form is submitted (the list is checked against the app's routes, so a
new form cannot be forgotten); in Chromium one form is submitted and the page reloaded."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import httpx
import trio

from tests.api.helpers import start_trial
from tests.api.notify_receiver import start_receiver
from tests.billing.fake_stripe import serve_fake_stripe
from tests.conftest import RunningService, unique_email
from tests.engine.fake_market import FakeMarket
from tests.web.conftest import PASSWORD, TRIAL, InBrowser, StartWeb
from tests.web.test_pages import TOKEN, _form_routes

URL = "https://www.vinted.fr/catalog?catalog[]=1904"
ID = re.compile(r"(?<=/)[a-z]+_[0-9A-Za-z_]+(?=/|$)")
# What each test below submits, as the app's routes name them.
SIGNED_OUT = ["/signup", "/login", "/forgot-password", "/reset-password", "/confirm-email",
              "/billing/trial/confirm", "/notifications/confirm", "/logout"]  # fmt: skip
WORKSPACE = ["/account/confirm-email/resend", "/billing/trial", "/monitors",
             "/monitors/xx_none/pause", "/monitors/xx_none/resume", "/monitors/xx_none/alerts",
             "/runs", "/runs/xx_none/cancel", "/runs/xx_none/replay", "/analyses/xx_none/pin",
             "/dashboard/unpin", "/analyses/import", "/account/settings", "/account/keys",
             "/account/keys/xx_none/revoke", "/runs/xx_none/delete",
             "/monitors/xx_none/delete"]  # fmt: skip
CHANNELS = ["/notifications/channels", "/notifications/channels/xx_none/test",
            "/notifications/channels/xx_none/send-confirmation",
            "/notifications/channels/xx_none/rotate", "/notifications/channels/xx_none/disable",
            "/notifications/channels/xx_none/enable",
            "/notifications/channels/xx_none/delete"]  # fmt: skip
PAYMENTS = ["/billing/checkout", "/billing/portal"]


def token_for(html: str, action: str) -> str:
    """The CSRF token of the form posting to `action` on the page `html`."""
    start = html.find(f'action="{action}"')
    assert start >= 0, f"no form posts to {action}"
    found = TOKEN.search(html, start)
    assert found, f"the form to {action} has no token"
    return found.group(1)


async def send(
    client: httpx.AsyncClient,
    action: str,
    data: dict[str, Any] | None = None,
    *,
    shown_on: str,
    files: dict[str, Any] | None = None,
) -> tuple[str, str]:
    """Submit the form to `action` as shown on the page `shown_on`: it must answer 303 to a
    page of this site that renders 200. Returns the Location and that page's HTML."""
    html = (await client.get(shown_on)).text
    form = {**(data or {}), "csrf_token": token_for(html, action)}
    answer = await client.post(action, data=form, files=files)
    assert answer.status_code == 303, (action, answer.status_code, answer.text[:500])
    location = answer.headers["location"]
    assert location.startswith("/") and not location.startswith("//"), location
    landed = await client.get(location)
    assert landed.status_code == 200, (action, location, landed.status_code)
    assert landed.headers["content-type"].startswith("text/html")
    return location, landed.text


def id_in(location: str) -> str:
    return urlsplit(location).path.split("/")[2]


async def mailed_token(service: RunningService, path: str, to: str) -> str:
    (mail, *_) = reversed(await service.mails(f"To: {to}", path))
    found = re.search(re.escape(path) + r"\?token=([A-Za-z0-9_\-]+)", mail)
    assert found, mail
    return found.group(1)


async def test_every_form_is_submitted_here() -> None:
    covered = SIGNED_OUT + WORKSPACE + CHANNELS + PAYMENTS
    assert sorted(covered) == sorted(await _form_routes())


async def test_forms_before_sign_in_redirect(start_web: StartWeb) -> None:
    service = await start_web(plan_quotas=TRIAL)
    email = unique_email("prg")
    account = {"email": email, "password": PASSWORD}
    async with service.client() as client:
        where, _ = await send(client, "/signup", account, shown_on="/signup")
        assert where == "/login?notice=registered"
        token = await mailed_token(service, "/confirm-email", email)
        where, html = await send(client, "/confirm-email", {"token": token},
                                 shown_on=f"/confirm-email?token={token}")  # fmt: skip
        assert where == "/confirm-email?notice=confirmed" and "is confirmed" in html
        where, html = await send(client, "/forgot-password", {"email": email},
                                 shown_on="/forgot-password")  # fmt: skip
        assert where == "/forgot-password?notice=reset-sent" and email in html
        again = await client.get(where)  # the address was shown once; the news stays
        assert email not in again.text and "a reset link is on its way" in again.text
        token = await mailed_token(service, "/reset-password", email)
        new = {"token": token, "password": PASSWORD + "!"}
        where, _ = await send(client, "/reset-password", new,
                              shown_on=f"/reset-password?token={token}")  # fmt: skip
        assert where == "/login?notice=password-changed"
        where, _ = await send(client, "/login", {**account, "password": PASSWORD + "!"},
                              shown_on="/login")  # fmt: skip
        assert where == "/dashboard"
        await start_trial_by_page(client, service, email)
        await confirm_a_channel(client, service)
        where, html = await send(client, "/logout", shown_on="/dashboard")
        assert where == "/login?notice=signed-out" and "You are signed out." in html


async def start_trial_by_page(
    client: httpx.AsyncClient, service: RunningService, email: str
) -> None:
    where, html = await send(client, "/billing/trial", shown_on="/billing")
    assert where == "/billing?notice=trial-sent" and "Check your inbox" in html
    token = await mailed_token(service, "/billing/trial/confirm", email)
    async with service.client() as elsewhere:  # the link works in any browser
        where, html = await send(elsewhere, "/billing/trial/confirm", {"token": token},
                                 shown_on=f"/billing/trial/confirm?token={token}")  # fmt: skip
        assert where == "/billing/trial/confirm?notice=started"
        assert "Your free trial has started" in html and "It runs until" in html
        again = (await elsewhere.get(where)).text  # reloaded: still started, nothing sent
        assert "Your free trial has started" in again and "Start my trial" not in again


async def confirm_a_channel(client: httpx.AsyncClient, service: RunningService) -> None:
    """An e-mail channel to someone else's address, confirmed from the mailed link."""
    to = unique_email("recipient")
    channel = {"kind": "email", "name": "Partner", "email": to}
    where, _ = await send(client, "/notifications/channels", channel, shown_on="/notifications")
    assert where == "/notifications?notice=confirm-sent"
    token = await mailed_token(service, "/notifications/confirm", to)
    async with service.client() as recipient:
        where, html = await send(recipient, "/notifications/confirm", {"token": token},
                                 shown_on=f"/notifications/confirm?token={token}")  # fmt: skip
        assert where == "/notifications/confirm?notice=confirmed" and "are confirmed" in html


async def signed_in_on_trial(client: httpx.AsyncClient, *, resend: bool = False) -> str:
    """A new account signed in, on the trial (whose mailed link proves its address too, so
    the banner's "Send the link again" is submitted before, when `resend`)."""
    email = unique_email("prg")
    account = {"email": email, "password": PASSWORD}
    await send(client, "/signup", account, shown_on="/signup")
    await send(client, "/login", account, shown_on="/login")
    if resend:
        where, _ = await send(client, "/account/confirm-email/resend", shown_on="/dashboard")
        assert where.startswith("/dashboard?notice=confirm-")
    await start_trial(client, email)  # type: ignore[arg-type]
    return email


async def finished(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    with trio.fail_after(60):
        while (run := (await client.get(f"/api/runs/{run_id}")).json())["state"] in (
            "queued",
            "running",
        ):
            await trio.sleep(0.05)
    return dict(run)


async def test_workspace_forms_redirect(start_web: StartWeb, market: FakeMarket) -> None:
    for item in range(1, 21):
        market.list(item, f"{10 + item % 7}.00")
    service = await start_web(plan_quotas=TRIAL, min_poll_seconds=1)
    async with service.client() as client:
        await signed_in_on_trial(client, resend=True)
        market.gate = trio.Event()  # the run waits on the marketplace: it can be cancelled
        where, _ = await send(client, "/runs", {"source": "url", "url": URL}, shown_on="/runs")
        run = id_in(where)
        where, html = await send(client, f"/runs/{run}/cancel", shown_on=f"/runs/{run}")
        assert where == f"/runs/{run}?notice=cancelled" and "was cancelled" in html
        market.gate.set()
        market.gate = None
        await finished(client, run)
        where, _ = await send(client, f"/runs/{run}/replay", shown_on=f"/runs/{run}")
        analysis = (await finished(client, id_in(where)))["analysis_id"]
        where, _ = await send(client, f"/runs/{run}/delete", shown_on=f"/runs/{run}/delete")
        assert where == "/runs?notice=deleted"
        await monitor_forms(client, analysis)
        where, _ = await send(client, "/account/settings",
                              {"shipping": "3.50", "packaging": "0.50", "margin": "20"},
                              shown_on="/account/settings")  # fmt: skip
        assert where == "/account/settings?notice=saved"
        await key_forms(client)


async def monitor_forms(client: httpx.AsyncClient, analysis: str) -> None:
    """Monitor, its alerts, an analysis of its history, pin and unpin, import, delete."""
    where, html = await send(client, f"/analyses/{analysis}/pin",
                             shown_on=f"/analyses/{analysis}")  # fmt: skip
    assert where == "/dashboard?notice=pinned" and 'action="/dashboard/unpin"' in html
    where, html = await send(client, "/dashboard/unpin", shown_on="/dashboard")
    assert where == "/dashboard?notice=unpinned" and "Unpinned" in html
    new = {"source": "url", "url": URL, "label": "Jeans", "interval": "1"}
    where, _ = await send(client, "/monitors", new, shown_on="/monitors")
    monitor = id_in(where)
    page = f"/monitors/{monitor}"
    with trio.fail_after(60):
        while (await client.get(f"/api/monitoring/{monitor}")).json()["status"] != "active":
            await trio.sleep(0.05)
    where, html = await send(client, f"{page}/pause", shown_on=page)
    assert where == f"{page}?notice=paused" and "The monitor is paused" in html
    where, _ = await send(client, f"{page}/resume", shown_on=page)
    assert where == f"{page}?notice=resumed"
    rule = {"kinds": "deal", "deal_pct": "70", "mode": "instant", "enabled": "on"}
    where, html = await send(client, f"{page}/alerts", rule, shown_on=f"{page}/alerts")
    assert where == f"{page}/alerts?notice=saved" and "Saved." in html
    where, _ = await send(client, "/runs", {"source": "monitor", "monitor_id": monitor},
                          shown_on=page)  # fmt: skip
    assert where.startswith("/runs/run_") and where.endswith("?notice=started")
    export = (await client.get(f"/api/monitoring/{monitor}/export")).content
    upload = {"file": ("export.json", export, "application/json")}
    where, html = await send(client, "/analyses/import", files=upload, shown_on="/analyses")
    assert where.endswith("?notice=imported") and "Your export was imported" in html
    where, _ = await send(client, f"{page}/delete", shown_on=f"{page}/delete")
    assert where == "/monitors?notice=deleted"


async def key_forms(client: httpx.AsyncClient) -> None:
    """A new key's plaintext shows once, after the redirect, then never again."""
    where, html = await send(client, "/account/keys", {"label": "script", "scopes": "read"},
                             shown_on="/account/keys")  # fmt: skip
    assert where == "/account/keys" and "Copy this token now." in html
    token = re.search(r'value="(nsc_[^"]+)"', html)
    assert token is not None
    assert token.group(1) not in (await client.get(where)).text
    key_id = (await client.get("/api/account/keys")).json()["keys"][0]["id"]
    where, _ = await send(client, f"/account/keys/{key_id}/revoke", shown_on="/account/keys")
    assert where == "/account/keys?notice=revoked"


async def test_channel_forms_redirect(start_web: StartWeb, nursery: trio.Nursery) -> None:
    receiver = await start_receiver(nursery)
    service = await start_web(plan_quotas=TRIAL, outbound_allow=(receiver.origin,))
    async with service.client() as client:
        await signed_in_on_trial(client)
        hook = {"kind": "webhook", "name": "Shop hook", "url": f"{receiver.origin}/hook"}
        where, html = await send(client, "/notifications/channels", hook, shown_on="/notifications")
        assert where == "/notifications?notice=added" and "Copy this secret now." in html
        assert "Copy this secret now." not in (await client.get(where)).text  # once
        channel = (await client.get("/api/notifications/channels")).json()["channels"][0]["id"]
        base = f"/notifications/channels/{channel}"
        where, html = await send(client, f"{base}/test", shown_on="/notifications")
        assert where == "/notifications" and "data-test-result" in html
        assert "data-test-result" not in (await client.get(where)).text
        assert len(receiver.requests) == 1  # the reloads sent nothing
        where, html = await send(client, f"{base}/rotate", shown_on="/notifications")
        assert where == "/notifications" and "The previous secret keeps signing" in html
        for action, notice in (("disable", "disabled"), ("enable", "enabled")):
            where, _ = await send(client, f"{base}/{action}", shown_on="/notifications")
            assert where == f"/notifications?notice={notice}"
        mail = {"kind": "email", "name": "Partner", "email": unique_email("partner")}
        await send(client, "/notifications/channels", mail, shown_on="/notifications")
        listed = (await client.get("/api/notifications/channels")).json()["channels"]
        waiting = next(c["id"] for c in listed if c["kind"] == "email")
        where, _ = await send(client, f"/notifications/channels/{waiting}/send-confirmation",
                              shown_on="/notifications")  # fmt: skip
        assert where == "/notifications?notice=confirm-sent"
        where, _ = await send(client, f"{base}/delete", shown_on="/notifications")
        assert where == "/notifications?notice=deleted"


async def test_payment_forms_redirect_to_the_payment_provider(
    start_web: StartWeb, nursery: trio.Nursery
) -> None:
    """Checkout and the billing portal answer 303 to the provider's pages (GET pages of its
    own, not this site's): the provider's fake here."""
    stripe, stop = await serve_fake_stripe(nursery, "sk_test_prg")
    service = await start_web(
        stripe_secret_key="sk_test_prg",
        stripe_api_base=stripe.url,
        stripe_price_starter="price_starter_prg",
        stripe_price_pro="price_pro_prg",
    )
    async with service.client() as client:
        await signed_in_on_trial(client)
        for action, data in (("/billing/checkout", {"plan": "starter"}), ("/billing/portal", {})):
            html = (await client.get("/billing")).text
            form = {**data, "csrf_token": token_for(html, action)}
            answer = await client.post(action, data=form)
            assert answer.status_code == 303, (action, answer.text[:300])
            assert answer.headers["location"].startswith(stripe.url), answer.headers
    stop.set()


async def test_what_a_redirect_carries_shows_in_that_browser_only(start_web: StartWeb) -> None:
    service = await start_web()
    async with service.client() as owner, service.client() as other:
        await signed_in_on_trial(owner)
        await signed_in_on_trial(other)
        html = (await owner.get("/account/keys")).text
        form = {"label": "k", "scopes": "read", "csrf_token": token_for(html, "/account/keys")}
        made = await owner.post("/account/keys", data=form)
        carried = made.cookies["ns_flash"]
        assert "nsc_" not in carried  # sealed: the cookie does not hold the plaintext
        other.cookies.set("ns_flash", carried)
        assert "Copy this token now." not in (await other.get("/account/keys")).text
        forged = carried[:-4] + ("AAAA" if not carried.endswith("AAAA") else "BBBB")
        owner.cookies.delete("ns_flash")
        owner.cookies.set("ns_flash", forged)
        assert "Copy this token now." not in (await owner.get("/account/keys")).text
        owner.cookies.delete("ns_flash")
        owner.cookies.set("ns_flash", carried)  # set the same way, the true one shows
        assert "Copy this token now." in (await owner.get("/account/keys")).text


async def test_a_reload_after_a_form_sends_nothing(
    start_web: StartWeb, in_browser: InBrowser[Any]
) -> None:
    service = await start_web(plan_quotas=TRIAL)
    base = service.url
    async with service.client() as client:
        await signed_in_on_trial(client)
        cookie = client.cookies["session_token"]

    def scenario(page: Any) -> list[str]:
        page.context.add_cookies([{"name": "session_token", "value": cookie, "url": base}])
        page.goto(f"{base}/runs")
        page.get_by_label("Catalogue URL").fill(URL)
        page.get_by_role("button", name="Start analysis").click()
        page.wait_for_url(re.compile(r"/runs/run_\w+\?notice=started"))
        assert page.url != f"{base}/runs"  # the address is the page's, not the form's
        posts: list[str] = []
        page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
        page.reload()
        page.wait_for_load_state()
        assert page.get_by_text("Your analysis is queued").is_visible()
        return posts

    assert await in_browser(scenario) == []
    async with service.client() as client:
        client.cookies.set("session_token", cookie)
        assert (await client.get("/api/runs")).json()["total"] == 1  # one run, not two
