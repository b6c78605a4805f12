"""Security probes over real sockets: what an attacker would try first, asserted end to end.

Only the cross-workspace probe runs on both databases (workspace scoping lives in the SQL);
the others do not depend on the backend and run on SQLite only. Probes that existing tests
already cover exactly are not repeated here:
- a revoked PAT refused on the next request: tests/api/test_keys.py
  (`test_revocation_is_immediate_and_scoped_to_the_owner`) and tests/mcp/test_tools.py
  (`test_tools_call_refusals`);
- forged Stripe webhooks (no, bad, stale or wrong-secret signature; nothing applied):
  tests/billing/test_webhook.py (`test_forged_webhooks_are_refused_and_change_nothing`);
- a body over the route limit with a declared Content-Length: tests/api/test_platform.py
  (`test_oversized_body_is_refused`);
- another workspace's pages (HTML): tests/web/test_app_pages.py.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from http.cookies import SimpleCookie

import httpx
import pytest
import trio

from api.analyses.actions import GRAPH_NAMES
from api.http.security import TokenHasher, new_id
from api.process.serve import ServeOptions, hypercorn_config
from api.settings import Settings
from tests.analysis.factory import History, export_document
from tests.api.helpers import (
    PASSWORD,
    assert_envelope,
    assert_invalid,
    bearer,
    create_token,
    register,
    signed_in,
    wait_active,
    wait_finished_run,
)
from tests.conftest import RunningService, ServiceClient, start_service, unique_email
from tests.engine.fake_market import FakeMarket
from tests.mcp.helpers import call_tool

# Probes whose outcome does not depend on the database pin SQLite: half the runtime.
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
URL = "https://www.vinted.fr/catalog?catalog[]=1904"


def _stock(market: FakeMarket, items: int = 40) -> None:
    for item in range(1, items + 1):
        market.list(item, price=f"{10 + item % 7}.00")


async def _me(
    client: httpx.AsyncClient, headers: Mapping[str, str] | None = None
) -> dict[str, object]:
    response = await client.get("/api/auth/me", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


# -- another workspace's resources ----------------------------------------------------------


@dataclass(frozen=True)
class Foreign:
    """One request on another workspace's resource: `{monitor}`, `{run}`, `{analysis}` and
    `{key}` in the path (and in string values of the body) name the owner's resources."""

    method: str
    path: str
    body: Mapping[str, object] | None = None
    browser_only: bool = False  # access tokens get 403 here whatever the id (test_keys.py)

    def render(self, ids: Mapping[str, str]) -> tuple[str, dict[str, object] | None]:
        body = None
        if self.body is not None:
            body = {k: v.format(**ids) if isinstance(v, str) else v for k, v in self.body.items()}
        return self.path.format(**ids), body


# Adding an endpoint that takes a resource id is one line here.
CROSS_WORKSPACE: tuple[Foreign, ...] = (
    Foreign("GET", "/api/monitoring/{monitor}"),
    Foreign("POST", "/api/monitoring/{monitor}/pause"),
    Foreign("POST", "/api/monitoring/{monitor}/resume"),
    Foreign("DELETE", "/api/monitoring/{monitor}"),
    Foreign("GET", "/api/monitoring/{monitor}/listings"),
    Foreign("GET", "/api/monitoring/{monitor}/listings?state=all&page_size=200"),
    Foreign("GET", "/api/monitoring/{monitor}/export"),
    Foreign("POST", "/api/monitoring/start", {"analysis_id": "{analysis}", "interval_seconds": 60}),
    Foreign("POST", "/api/runs", {"monitor_id": "{monitor}"}),
    Foreign("GET", "/api/runs/{run}"),
    Foreign("POST", "/api/runs/{run}/cancel"),
    Foreign("POST", "/api/runs/{run}/replay"),
    Foreign("DELETE", "/api/runs/{run}"),
    Foreign("GET", "/api/runs/{run}/log"),
    Foreign("GET", "/api/runs/{run}/alerts-download"),
    Foreign("GET", "/api/runs/{run}/alerts-download?format=json"),
    Foreign("GET", "/api/dashboard?run_id={run}"),
    Foreign("GET", "/api/analyses/{analysis}"),
    *(
        Foreign("GET", f"/api/analyses/{{analysis}}/graphs/{name}.{kind}")
        for name in GRAPH_NAMES
        for kind in ("json", "svg")
    ),
    Foreign("DELETE", "/api/account/keys/{key}", browser_only=True),
)


@dataclass(frozen=True)
class OwnerWorld:
    ids: dict[str, str]
    secrets: tuple[str, ...]  # what must never reach the stranger unless the stranger sent it
    token: str


async def _owner_world(owner: httpx.AsyncClient) -> OwnerWorld:
    """One of each resource: an active monitor, a succeeded run with its analysis, a key."""
    marker = uuid.uuid4().hex[:12]
    url = f"{URL}&search_text=owner{marker}"
    started = await owner.post(
        "/api/monitoring/start",
        json={"url": url, "label": f"monitor-{marker}", "interval_seconds": 60},
    )
    assert started.status_code == 202, started.text
    monitor_id = str(started.json()["id"])
    await wait_active(owner, monitor_id)
    created = await owner.post(
        "/api/runs", json={"url": url, "label": f"run-{marker}", "max_items": 30}
    )
    assert created.status_code == 201, created.text
    run = await wait_finished_run(owner, str(created.json()["id"]))
    assert run["state"] == "succeeded", run
    token = await create_token(owner, ["read", "write"], label=f"key-{marker}")
    [key] = (await owner.get("/api/account/keys")).json()["keys"]
    me = await _me(owner)
    user, workspace = me["user"], me["workspace"]
    assert isinstance(user, dict) and isinstance(workspace, dict)
    ids = {
        "monitor": monitor_id,
        "run": str(run["id"]),
        "analysis": str(run["analysis_id"]),
        "key": str(key["id"]),
    }
    secrets = (
        *ids.values(),
        marker,  # in the URL and every label
        url,
        str(workspace["id"]),
        str(user["id"]),
        str(user["email"]),
        token,
    )
    return OwnerWorld(ids=ids, secrets=secrets, token=token)


async def _check_foreign(
    client: httpx.AsyncClient,
    probe: Foreign,
    world: OwnerWorld,
    headers: Mapping[str, str],
) -> None:
    path, body = probe.render(world.ids)
    response = await client.request(probe.method, path, json=body, headers=headers)
    assert_envelope(response, 404, "not_found")
    sent = path + json.dumps(body)
    for secret in world.secrets:
        if secret not in sent:
            assert secret not in response.text, f"leaks {secret!r}: {response.text}"
    # Indistinguishable from an id that never existed: nobody learns what exists elsewhere.
    ghost_ids = {name: new_id(value.partition("_")[0]) for name, value in world.ids.items()}
    ghost_path, ghost_body = probe.render(ghost_ids)
    ghost = await client.request(probe.method, ghost_path, json=ghost_body, headers=headers)
    assert (ghost.status_code, ghost.json()) == (response.status_code, response.json())


async def test_another_workspace_gets_404_on_everything_and_learns_nothing(
    service: RunningService, market: FakeMarket
) -> None:
    _stock(market)
    async with service.client() as owner, service.client() as stranger, service.client() as agent:
        await signed_in(owner)
        await signed_in(stranger)
        world = await _owner_world(owner)
        stranger_token = await create_token(stranger, ["read", "write"])
        failures: list[str] = []
        for probe in CROSS_WORKSPACE:
            # The stranger's session, then the stranger's read+write access token: both scope
            # to the stranger's workspace, through different authentication paths.
            callers: list[tuple[str, httpx.AsyncClient, dict[str, str]]] = [
                ("session", stranger, {})
            ]
            if not probe.browser_only:
                callers.append(("token", agent, bearer(stranger_token)))
            for via, client, headers in callers:
                try:
                    await _check_foreign(client, probe, world, headers)
                except AssertionError as err:  # every row is reported, not just the first
                    failures.append(f"{via} {probe.method} {probe.path}: {err}")
        assert not failures, "\n".join(failures)

        # Nothing was paused, deleted, cancelled, replayed or revoked by the attempts.
        monitor = (await owner.get(f"/api/monitoring/{world.ids['monitor']}")).json()
        assert monitor["status"] == "active"
        runs = (await owner.get("/api/runs")).json()
        assert [r["id"] for r in runs["runs"]] == [world.ids["run"]]
        assert runs["runs"][0]["state"] == "succeeded"
        assert (await owner.get(f"/api/analyses/{world.ids['analysis']}")).status_code == 200
        [key] = (await owner.get("/api/account/keys")).json()["keys"]
        assert key["revoked"] is False
        assert (await agent.get("/api/auth/me", headers=bearer(world.token))).status_code == 200
        for listing in ("/api/monitoring", "/api/runs", "/api/analyses"):
            body = (await stranger.get(listing)).json()
            assert not any(body.get(k) for k in ("monitors", "runs", "analyses")), body


# -- mass assignment ------------------------------------------------------------------------

# Fields a client might hope the server copies onto a record.
GRABS: tuple[str, ...] = (
    "workspace_id",
    "user_id",
    "status",
    "id",
    "is_operator",
    "operator",
    "plan",
    "source_analysis_id",
)


@SQLITE_ONLY
async def test_mass_assignment_is_refused_and_nothing_is_applied(service: RunningService) -> None:
    async with service.client() as client, service.client() as victim:
        await signed_in(client)
        await signed_in(victim)
        victim_ws = str((await _me(victim))["workspace"]["id"])  # type: ignore[index]
        before = await _me(client)
        new_emails = [unique_email("grab") for _ in GRABS]
        # Every body the API takes is `Strict`: an unknown field is a 422 naming it, so a
        # grab is neither silently applied nor silently dropped.
        bodies: list[tuple[str, str, dict[str, object]]] = [
            ("POST", "/api/monitoring/start", {"url": URL, "interval_seconds": 60}),
            ("POST", "/api/runs", {"url": URL, "max_items": 10}),
            ("PATCH", "/api/auth/me", {"name": "Mallory"}),
            ("POST", "/api/account/keys", {"label": "grab", "scopes": ["read"]}),
        ]
        for field, email in zip(GRABS, new_emails, strict=True):
            value = victim_ws if field == "workspace_id" else True if "operator" in field else "x"
            register_body: dict[str, object] = {"email": email, "password": PASSWORD}
            for method, path, body in [*bodies, ("POST", "/api/auth/register", register_body)]:
                response = await client.request(method, path, json={**body, field: value})
                errors = assert_invalid(response, ["body", field])
                assert {"loc": ["body", field], "type": "extra_forbidden"} in [
                    {"loc": e["loc"], "type": e["type"]} for e in errors
                ], (method, path, errors)

        assert await _me(client) == before  # name, workspace, operator flag, plan: unchanged
        for path, key in (("/api/monitoring", "monitors"), ("/api/runs", "runs")):
            assert (await client.get(path)).json()[key] == []
            assert (await victim.get(path)).json()[key] == []
        assert (await client.get("/api/account/keys")).json()["keys"] == []
        async with service.client() as fresh:
            for email in new_emails[:3]:  # no account was created by a refused registration
                login = await fresh.post(
                    "/api/auth/login", json={"email": email, "password": PASSWORD}
                )
                assert_envelope(login, 401, "invalid_credentials")

        # Query strings are not bodies: unknown parameters are ignored, and the workspace
        # always comes from the credentials, never from the request.
        started = await victim.post(
            "/api/monitoring/start", json={"url": URL, "interval_seconds": 60}
        )
        assert started.status_code == 202, started.text
        assert (await victim.post("/api/runs", json={"url": URL})).status_code == 201
        for path, key in (("/api/monitoring", "monitors"), ("/api/runs", "runs")):
            for params in ({"workspace_id": victim_ws}, {"workspace": victim_ws}):
                listed = await client.get(path, params=params)
                assert listed.status_code == 200 and listed.json()[key] == [], listed.text


# -- no secret in any answer ----------------------------------------------------------------


@SQLITE_ONLY
async def test_no_answer_carries_a_hash_or_a_secret_beyond_its_one_showing(
    service: RunningService, market: FakeMarket
) -> None:
    _stock(market)
    answers: list[tuple[str, str]] = []

    async def keep(response: httpx.Response) -> None:
        await response.aread()
        # Set-Cookie legitimately carries the session secret; everything else is checked.
        headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items() if k != "set-cookie")
        answers.append(
            (f"{response.request.method} {response.request.url}", headers + "\n" + response.text)
        )

    hooks = {"response": [keep]}
    async with (
        service.client(event_hooks=hooks) as browser,
        service.client(event_hooks=hooks) as agent,
    ):
        email = await signed_in(browser)  # register, login, trial start and confirmation
        session_secret = browser.cookies["session_token"]
        await browser.post("/api/auth/login", json={"email": email, "password": "wrong password"})
        await browser.get("/api/auth/me")
        await browser.patch("/api/auth/me", json={"name": "Ada"})
        created = await browser.post(
            "/api/account/keys", json={"label": "ci", "scopes": ["read", "write"]}
        )
        assert created.status_code == 201, created.text
        creation = len(answers) - 1
        token, key_id = str(created.json()["token"]), str(created.json()["id"])
        await browser.get("/api/account/keys")
        auth = bearer(token)
        await agent.get("/api/auth/me", headers=auth)
        monitor = await agent.post(
            "/api/monitoring/start", json={"url": URL, "interval_seconds": 60}, headers=auth
        )
        assert monitor.status_code == 202, monitor.text
        await agent.get("/api/monitoring", headers=auth)
        await agent.get(f"/api/monitoring/{monitor.json()['id']}", headers=auth)
        run = await agent.post("/api/runs", json={"url": URL, "max_items": 20}, headers=auth)
        assert run.status_code == 201, run.text
        await wait_finished_run(browser, str(run.json()["id"]))
        await agent.get("/api/runs", headers=auth)
        await agent.get("/api/dashboard", headers=auth)
        assert (await call_tool(agent, "whoami", {}, auth)).status_code == 200
        await browser.post("/api/auth/forgot-password", json={"email": email})
        [mail] = await service.mails("Reset your Nichescope password")
        reset = re.search(r"/reset-password\?token=([A-Za-z0-9_\-]+)", mail)
        assert reset, mail
        await browser.delete(f"/api/account/keys/{key_id}")
        await agent.get("/api/auth/me", headers=auth)  # 401 now
        await browser.post("/api/auth/logout")

    hasher = TokenHasher(service.settings.secret_key)  # how the store keys its lookups
    anywhere = {
        "a password hash": "argon2",
        "a hash column": "password_hash",
        "another hash column": "token_hash",
        "the password": PASSWORD,
        "the token's digest": hasher.digest(token),
        "the session secret": session_secret,
        "the session's digest": hasher.digest(session_secret),
        "the service secret": service.settings.secret_key,
        "the e-mailed reset token": reset.group(1),
        "the reset token's digest": hasher.digest(reset.group(1)),
    }
    shown_once = {"the token": token, "the token's secret": token.partition("_")[2]}
    assert len(answers) > 20, answers
    assert token in answers[creation][1]
    for index, (request, text) in enumerate(answers):
        for what, value in anywhere.items():
            assert value not in text, f"{request} shows {what}"
        if index != creation:
            for what, value in shown_once.items():
                assert value not in text, f"{request} shows {what} again"


# -- session fixation -----------------------------------------------------------------------


def _session_cookie(response: httpx.Response) -> str:
    cookie = SimpleCookie()
    for header in response.headers.get_list("set-cookie"):
        if header.startswith("session_token="):
            cookie.load(header)
    return cookie["session_token"].value


async def _who(service: RunningService, session: str) -> httpx.Response:
    async with service.client(cookies={"session_token": session}) as client:
        return await client.get("/api/auth/me")


@SQLITE_ONLY
async def test_a_planted_session_cookie_never_becomes_the_victims_session(
    service: RunningService,
) -> None:
    # tests/api/test_auth.py plants a made-up value; here the attacker also plants a live
    # session of their own, the strongest thing they can set in a victim's browser.
    async with service.client() as attacker:
        await signed_in(attacker, trial=False)
        live = attacker.cookies["session_token"]
    made_up = "fixation-" + uuid.uuid4().hex * 2
    for planted in (live, made_up):
        victim_email = unique_email("victim")
        async with service.client(cookies={"session_token": planted}) as victim:
            await register(victim, victim_email)
            login = await victim.post(
                "/api/auth/login", json={"email": victim_email, "password": PASSWORD}
            )
            assert login.status_code == 200, login.text
        fresh = _session_cookie(login)
        assert fresh != planted
        me = await _who(service, fresh)
        assert me.status_code == 200 and me.json()["user"]["email"] == victim_email
        # The planted value authenticates as nobody afterwards (a live one was ended by the
        # sign-in it was sent with), and certainly not as the victim.
        assert_envelope(await _who(service, planted), 401, "unauthorized")


# -- SSRF -----------------------------------------------------------------------------------


@dataclass
class Canary:
    """A loopback listener that counts connections: a refused URL must never reach it."""

    port: int
    connections: int = 0


@pytest.fixture
async def canary(nursery: trio.Nursery) -> AsyncIterator[Canary]:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    found = Canary(port=listeners[0].socket.getsockname()[1])

    async def count(stream: trio.SocketStream) -> None:
        found.connections += 1
        await stream.aclose()

    nursery.start_soon(trio.serve_listeners, count, listeners)
    # Knock once: proves the canary counts before its silence is taken as evidence.
    async with await trio.open_tcp_stream("127.0.0.1", found.port) as stream:
        await stream.receive_some(1)  # EOF once the handler has counted and hung up
    assert found.connections == 1
    yield found


def ssrf_forms(port: int) -> list[tuple[str, str]]:
    """(URL, words the refusal's reason contains) for each way of pointing the fetcher inward."""
    return [
        ("http://127.0.0.1/", "IP address"),
        (f"http://127.0.0.1:{port}/catalog", "IP address"),
        ("http://localhost/", "not a marketplace host"),
        (f"http://localhost:{port}/catalog", "not a marketplace host"),
        ("http://[::1]/", "IP address"),
        ("http://169.254.169.254/latest/meta-data", "IP address"),
        ("http://0x7f000001/", "numeric host"),
        ("http://2130706433/", "numeric host"),
        ("http://0177.0.0.1/", "numeric host"),
        ("file:///etc/passwd", "scheme"),
        ("gopher://www.vinted.fr:70/_GET%20/", "scheme"),
        ("http://evil@www.vinted.fr/catalog", "userinfo"),
        (f"https://www.vinted.fr@127.0.0.1:{port}/catalog", "userinfo"),
        ("https://evil.example/catalog", "not a marketplace host"),
        ("https://www.vinted.fr.evil.example/catalog", "not a marketplace host"),
        ("http://www.vinted.fr/catalog", "https on port 443"),
        ("https://www.vinted.fr:8443/catalog", "https on port 443"),
        ("https://www.vinted.fr/catalog\r\nX-Injected: 1", "control characters"),
    ]


@SQLITE_ONLY
async def test_ssrf_forms_are_refused_before_any_connection(
    settings: Settings, canary: Canary, nursery: trio.Nursery
) -> None:
    # The real marketplace client and its guard (the `service` fixture's fake market would
    # only test the fake). Every form below is refused without DNS, so no network is needed.
    running, stop = await start_service(nursery, settings, market=None)
    history = History()
    for sold in (1.0, 2.0, None, None):
        history.listing(sold_days_ago=sold)
    try:
        async with running.client() as client:
            await signed_in(client)
            for url, reason in ssrf_forms(canary.port):
                for path in ("/api/monitoring/start", "/api/runs"):
                    response = await client.post(path, json={"url": url})
                    body = assert_envelope(response, 400, "url_refused")
                    assert reason in body["error"]["message"], (url, body)  # type: ignore[index]
            # An analysis imported from a doctored export names a metadata URL; a monitor
            # started from it goes through the same guard.
            document = export_document(history)
            document["monitor"]["url"] = "http://169.254.169.254/latest/meta-data"
            imported = await client.post("/api/analysis/import-monitoring", json=document)
            assert imported.status_code == 201, imported.text
            from_analysis = await client.post(
                "/api/monitoring/start", json={"analysis_id": imported.json()["id"]}
            )
            assert_envelope(from_analysis, 400, "url_refused")
            assert (await client.get("/api/monitoring")).json()["monitors"] == []
            assert (await client.get("/api/runs")).json()["runs"] == []
    finally:
        stop.set()
    assert canary.connections == 1  # only the knock: nothing was fetched


# -- webhooks on a service without a signing secret -----------------------------------------


@SQLITE_ONLY
async def test_webhook_without_a_configured_secret_fails_closed(service: RunningService) -> None:
    # The forgeries against a configured secret are tests/billing/test_webhook.py's. Here the
    # service has none: a signature keyed with the empty secret must not verify (an HMAC with
    # an empty key is still an HMAC anyone can compute).
    assert service.settings.stripe_webhook_secret == ""
    payload = json.dumps(
        {"id": "evt_forged", "type": "checkout.session.completed", "data": {"object": {}}}
    ).encode()
    stamp = str(int(time.time()))
    signature = hmac.new(b"", stamp.encode() + b"." + payload, hashlib.sha256).hexdigest()
    async with service.client() as client:
        response = await client.post(
            "/api/billing/webhook",
            content=payload,
            headers={
                "Stripe-Signature": f"t={stamp},v1={signature}",
                "Content-Type": "application/json",
            },
        )
    assert_envelope(response, 503, "billing_unconfigured")


# -- oversized and deeply nested bodies -----------------------------------------------------


def _host_port(service: RunningService) -> tuple[str, int]:
    host, _, port = service.url.removeprefix("http://").rpartition(":")
    return host, int(port)


@SQLITE_ONLY
async def test_a_chunked_body_over_the_route_limit_is_cut_as_it_arrives(
    service: RunningService,
) -> None:
    # Without a Content-Length nothing can be refused up front; the route's limit (1 MiB for
    # register) must still stop the read, not the app's largest limit (64 MiB, imports).
    limit = service.settings.max_body_bytes
    host, port = _host_port(service)
    stream = await trio.open_tcp_stream(host, port)
    head = b""
    sent = 0
    async with stream, trio.open_nursery() as nursery:

        async def read_head() -> None:
            nonlocal head
            while b"\r\n\r\n" not in head:
                data = await stream.receive_some(65536)
                if not data:
                    break
                head += data
            nursery.cancel_scope.cancel()

        nursery.start_soon(read_head)
        await stream.send_all(
            b"POST /api/auth/register HTTP/1.1\r\nHost: probe\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        chunk = b"%x\r\n" % 65536 + b" " * 65536 + b"\r\n"
        with trio.fail_after(30):
            try:
                while sent < 16 * limit:
                    await stream.send_all(chunk)
                    sent += 65536
                # Reached only if the server kept reading: end the body so that it answers,
                # and `sent` shows how much it took in first.
                await stream.send_all(b"0\r\n\r\n")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the server answered and hung up mid-body: the reader has the answer
            await trio.sleep_forever()  # until the reader has the status line and headers
    assert head.startswith(b"HTTP/1.1 413"), head[:200]
    assert b"application/problem+json" in head
    assert sent <= 4 * limit, f"read {sent} bytes before refusing"
    async with service.client() as client:
        assert (await client.get("/health")).status_code == 200


def _nested(depth: int) -> list[tuple[str, bytes]]:
    return [
        ("arrays", b"[" * depth + b"]" * depth),
        ("objects", b'{"a":' * depth + b"1" + b"}" * depth),
        ("in a field", b'{"email": ' + b"[" * depth + b"]" * depth + b', "password": "x"}'),
    ]


@SQLITE_ONLY
async def test_deeply_nested_json_is_a_4xx_never_a_500(client: ServiceClient) -> None:
    token = await create_token(client, ["read", "write"])
    # 10,000 levels is past json's recursion guard; 900 parses and must fail validation.
    for depth in (10_000, 900):
        for shape, body in _nested(depth):
            for path in (
                "/api/auth/register",
                "/api/auth/login",
                "/api/runs",
                "/api/monitoring/start",
                "/api/analysis/import-monitoring",
            ):
                response = await client.post(
                    path, content=body, headers={"Content-Type": "application/json"}
                )
                what = (depth, shape, path, response.text[:300])
                assert 400 <= response.status_code < 500, what
                code = response.json()["error"]["code"]
                assert_envelope(response, response.status_code, code)
            rpc = await client.post(
                "/mcp",
                content=body,
                headers={
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                    **bearer(token),
                },
            )
            assert rpc.status_code == 400, (depth, shape, rpc.text[:300])
            assert rpc.json()["error"]["code"] in (-32700, -32600), rpc.text[:300]
    assert (await client.get("/health")).json() == {"status": "ok", "database": "ok"}


# -- slowloris ------------------------------------------------------------------------------

TRICKLERS = 20
SLACK_SECONDS = 5.0


@SQLITE_ONLY
async def test_slowloris_connections_are_cut_and_others_are_served(
    service: RunningService,
) -> None:
    # The real timeout (ServeOptions has no knob for it; the test takes about its length).
    keep_alive = float(hypercorn_config(ServeOptions()).keep_alive_timeout)
    host, port = _host_port(service)
    headers = b"GET /health HTTP/1.1\r\nHost: probe\r\nX-Trickle: " + b"a" * 1000
    closed_after: list[float] = []
    latencies: list[float] = []
    unconnected = TRICKLERS
    all_connected = trio.Event()

    async def trickle() -> None:
        """Send a header byte a second, never finishing; note when the server hangs up."""
        nonlocal unconnected
        opened = trio.current_time()
        stream = await trio.open_tcp_stream(host, port)
        unconnected -= 1
        if not unconnected:
            all_connected.set()
        async with stream, trio.open_nursery() as nursery:

            async def until_closed() -> None:
                try:
                    while await stream.receive_some(4096):
                        pass
                except trio.BrokenResourceError:
                    pass
                closed_after.append(trio.current_time() - opened)
                nursery.cancel_scope.cancel()

            nursery.start_soon(until_closed)
            try:
                for byte in headers:
                    await stream.send_all(bytes([byte]))
                    await trio.sleep(1)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                await trio.sleep_forever()  # until_closed records the hang-up

    async def health_meanwhile() -> None:
        await all_connected.wait()
        for _ in range(int(keep_alive) - 4):
            began = trio.current_time()
            async with service.client() as client:  # a new connection each time
                response = await client.get("/health")
            latencies.append(trio.current_time() - began)
            assert response.status_code == 200
            await trio.sleep(1)

    with trio.move_on_after(keep_alive + SLACK_SECONDS):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(health_meanwhile)
            for _ in range(TRICKLERS):
                nursery.start_soon(trickle)
    assert len(latencies) == int(keep_alive) - 4
    assert max(latencies) < 2.0, latencies
    assert len(closed_after) == TRICKLERS, f"{len(closed_after)} of {TRICKLERS} were cut"
    # Cut by the keep-alive timer (headers incomplete = idle), not earlier for another reason.
    assert all(keep_alive - 1 <= t <= keep_alive + SLACK_SECONDS for t in closed_after), (
        closed_after
    )
    async with service.client() as client:
        assert (await client.get("/health")).status_code == 200
