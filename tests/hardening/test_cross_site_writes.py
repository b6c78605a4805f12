"""A page on a sibling origin cannot change anything with the session cookie (#21, item 5).

Before: a page on another port of the same host (same site, so the SameSite=Lax cookie rides
along) paused a monitor with a plain form POST and imported an analysis with a no-cors
`text/plain` fetch; and, as logout is a public operation the rule never looked at, signed the
browser out with one (#33, item 7). Cookie-authenticated writes to `/api/*` now need this origin
(`Sec-Fetch-Site`/`Origin`) and a JSON body (`api/http/cross_site.py`); the same requests from the
service's own pages, and token calls, still work.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.api.helpers import PASSWORD, signed_in, wait_active
from tests.api.test_runs import URL, _stock
from tests.conftest import ServiceClient
from tests.engine.fake_market import FakeMarket
from tests.web.conftest import InBrowser, StartWeb, in_browser, start_web  # noqa: F401

ATTACK_PAGE = """<!doctype html><title>win a prize</title>
<form id="pause" method="POST" action="{service}/api/monitoring/{monitor}/pause"></form>
<script>
const target = "{service}/api/analysis/import-monitoring";
const form = new FormData();
form.append("file", new Blob([{export}], {{type: "application/json"}}), "export.json");
Promise.allSettled([
  fetch(target, {{method: "POST", mode: "no-cors", credentials: "include",
                 headers: {{"Content-Type": "text/plain"}}, body: {export}}}),
  fetch(target, {{method: "POST", mode: "no-cors", credentials: "include", body: form}}),
  fetch("{service}/api/auth/logout", {{method: "POST", mode: "no-cors", credentials: "include",
                                     headers: {{"Content-Type": "text/plain"}}, body: "bye"}}),
]).then(() => document.getElementById("pause").submit());
</script>"""


@pytest.fixture
def attacker_site() -> Iterator[tuple[str, dict[str, str]]]:
    """A real HTTP server on another port of the same host: a sibling origin, same site.
    Yields its origin and the pages it serves (path -> HTML), filled in by the test."""
    pages: dict[str, str] = {}

    class Pages(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path, "not here").encode()
            self.send_response(200 if self.path in pages else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", pages
    finally:
        server.shutdown()
        server.server_close()


async def test_a_sibling_origin_page_cannot_pause_or_import_with_the_cookie(
    start_web: StartWeb,  # noqa: F811
    in_browser: InBrowser[Any],  # noqa: F811
    market: FakeMarket,
    attacker_site: tuple[str, dict[str, str]],
) -> None:
    service = await start_web()
    base = service.url
    attacker, pages = attacker_site
    async with service.client() as client:
        assert isinstance(client, ServiceClient)
        email = await signed_in(client)
        _stock(market)
        started = await client.post("/api/monitoring/start", json={"url": URL})
        assert started.status_code in (201, 202), started.text
        monitor = started.json()["id"]
        await wait_active(client, monitor)
        document = (await client.get(f"/api/monitoring/{monitor}/export")).json()
    export_literal = json.dumps(json.dumps(document))
    pages["/prize.html"] = ATTACK_PAGE.format(service=base, monitor=monitor, export=export_literal)

    def scenario(page: Any) -> dict[str, Any]:
        page.goto(f"{base}/login")
        page.get_by_label("E-mail").fill(email)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{base}/dashboard")
        # The attack: the form POST navigates the tab to the service when the fetches settled.
        with page.expect_navigation(url=f"{base}/api/monitoring/{monitor}/pause"):
            page.goto(f"{attacker}/prize.html")
        attacked = {
            "pause_status": page.evaluate("document.body.innerText"),
            "monitor": page.request.get(f"{base}/api/monitoring/{monitor}").json(),
            "analyses": page.request.get(f"{base}/api/analyses").json(),
            "session": page.request.get(f"{base}/api/auth/me").status,
        }
        # The service's own pages still write through the API with the cookie.
        page.goto(f"{base}/dashboard")
        own = page.evaluate(
            """async ([monitor, body]) => {
                const form = new FormData();
                form.append("file", new Blob([body], {type: "application/json"}), "e.json");
                const imported = await fetch("/api/analysis/import-monitoring",
                                             {method: "POST", body: form});
                const paused = await fetch(`/api/monitoring/${monitor}/pause`, {method: "POST"});
                return [imported.status, paused.status];
            }""",
            [monitor, json.dumps(document)],
        )
        return {**attacked, "own": own}

    outcome = await in_browser(scenario)
    assert "cross_site_refused" in outcome["pause_status"], outcome["pause_status"]
    assert outcome["monitor"]["status"] == "active", outcome["monitor"]
    assert outcome["analyses"]["total"] == 0, "a cross-site import was stored"
    assert outcome["session"] == 200, "a cross-site logout ended the session"
    assert outcome["own"] == [201, 200], outcome["own"]


async def test_cookie_writes_without_json_are_refused_and_tokens_are_unaffected(
    start_web: StartWeb,  # noqa: F811
) -> None:
    """What a non-browser client or an old browser without fetch metadata meets."""
    service = await start_web()
    async with service.client() as client:
        await signed_in(client)
        as_text = await client.post(
            "/api/monitoring/start",
            content=json.dumps({"url": "https://www.vinted.fr/catalog?catalog[]=1"}),
            headers={"Content-Type": "text/plain"},
        )
        assert as_text.status_code == 415, as_text.text
        foreign = await client.post(
            "/api/account/keys",
            json={"label": "x", "scopes": ["read"]},
            headers={"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"},
        )
        assert foreign.status_code == 403 and foreign.json()["error"]["code"] == (
            "cross_site_refused"
        )
        created = await client.post(
            "/api/account/keys", json={"label": "agent", "scopes": ["read"]}
        )
        assert created.status_code == 201, created.text
        token = created.json()["token"]
    async with service.client(headers={"Authorization": f"Bearer {token}"}) as agent:
        # A token call with a foreign Origin is not a cookie riding along: not refused as such.
        listed = await agent.get("/api/monitoring", headers={"Origin": "http://elsewhere"})
        assert listed.status_code == 200


async def test_a_sibling_origin_cannot_sign_the_browser_out(start_web: StartWeb) -> None:  # noqa: F811
    """Logout answers 200 with or without a session (`access="public"`), but it acts on the
    cookie it carries: the cross-site rule applies to it as to any cookie write (#33, item 7)."""
    service = await start_web()
    async with service.client() as client:
        await signed_in(client)
        sibling = {"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"}
        from_sibling = await client.post(
            "/api/auth/logout", content="bye", headers={**sibling, "Content-Type": "text/plain"}
        )
        assert from_sibling.status_code == 403, from_sibling.text
        assert from_sibling.json()["error"]["code"] == "cross_site_refused"
        # A browser without fetch metadata is judged by the body: text/plain is not JSON.
        no_metadata = await client.post(
            "/api/auth/logout", content="bye", headers={"Content-Type": "text/plain"}
        )
        assert no_metadata.status_code == 415, no_metadata.text
        assert (await client.get("/api/auth/me")).status_code == 200
        # The service's own pages still sign out through the API.
        own = {"Origin": service.url, "Sec-Fetch-Site": "same-origin"}
        assert (await client.post("/api/auth/logout", headers=own)).status_code == 200
        assert (await client.get("/api/auth/me")).status_code == 401
