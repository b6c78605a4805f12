"""A fake of the few Stripe HTTP endpoints billing uses, served for real on loopback.

Endpoints: POST /v1/customers, POST /v1/checkout/sessions, GET /v1/checkout/sessions/{id},
POST /v1/billing_portal/sessions, GET /v1/subscriptions/{id}. Requests are form-encoded as
the stripe package sends them; answers are Stripe-shaped JSON. Tests drive what happens on
Stripe's side (a customer paying, a subscription being cancelled) with `pay`, `cancel`,
`set_status`, and read what was asked of it in `requests`.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import trio
from hypercorn.trio import serve

from tests.asgi import Receive, Scope, Send, lifespan, loopback_config, read_body, respond


def decode_form(body: str) -> dict[str, Any]:
    """`a[b][0][c]=v` pairs into nested dicts (list indexes stay dict keys "0", "1", ...)."""
    result: dict[str, Any] = {}
    for key, value in parse_qsl(body, keep_blank_values=True):
        head, *rest = re.findall(r"[^\[\]]+", key)
        node = result
        path = [head, *rest]
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return result


@dataclass
class FakeStripe:
    api_key: str
    url: str = ""
    customers: dict[str, dict[str, Any]] = field(default_factory=dict)
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    subscriptions: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_test_{next(self._ids):06d}"

    # -- what happens on Stripe's side ------------------------------------------------------

    def pay(self, session_id: str, *, period_days: int = 30) -> dict[str, Any]:
        """The customer completes the Checkout Session: a live subscription exists."""
        session = self.sessions[session_id]
        price = session["line_items"]["0"]["price"]
        sub_id = self.new_id("sub")
        period_end = int(time.time()) + period_days * 86400
        self.subscriptions[sub_id] = {
            "id": sub_id,
            "object": "subscription",
            "customer": session["customer"],
            "status": "active",
            "cancel_at_period_end": False,
            "metadata": session.get("subscription_data", {}).get("metadata", {}),
            "items": {
                "object": "list",
                "data": [
                    {
                        "id": self.new_id("si"),
                        "object": "subscription_item",
                        "price": {"id": price, "object": "price"},
                        "current_period_end": period_end,
                    }
                ],
            },
        }
        session.update(status="complete", payment_status="paid", subscription=sub_id)
        return self.subscriptions[sub_id]

    def set_status(self, sub_id: str, status: str) -> dict[str, Any]:
        self.subscriptions[sub_id]["status"] = status
        return self.subscriptions[sub_id]

    def cancel(self, sub_id: str) -> dict[str, Any]:
        return self.set_status(sub_id, "canceled")

    def calls(self, method: str, path_prefix: str) -> list[dict[str, Any]]:
        return [p for m, path, p in self.requests if m == method and path.startswith(path_prefix)]

    # -- the HTTP side ------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        body = await read_body(receive)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        method, path = scope["method"], scope["path"]
        params = decode_form(body.decode())
        self.requests.append((method, path, params))
        if headers.get("authorization") != f"Bearer {self.api_key}":
            status, answer = 401, _error("Invalid API Key provided", "authentication_error")
        else:
            status, answer = self._route(method, path, params)
        json_headers = [(b"content-type", b"application/json"), (b"request-id", b"req_1")]
        await respond(send, status, json_headers, json.dumps(answer).encode())

    def _route(self, method: str, path: str, params: dict[str, Any]) -> tuple[int, Any]:
        if method == "POST" and path == "/v1/customers":
            customer = {"id": self.new_id("cus"), "object": "customer", **params}
            self.customers[customer["id"]] = customer
            return 200, customer
        if method == "POST" and path == "/v1/checkout/sessions":
            if params.get("customer") not in self.customers:
                return 400, _error("No such customer", "invalid_request_error")
            session_id = self.new_id("cs")
            session = {
                "id": session_id,
                "object": "checkout.session",
                "url": f"{self.url}/pay/{session_id}",
                "status": "open",
                "payment_status": "unpaid",
                "subscription": None,
                **params,
            }
            self.sessions[session_id] = session
            return 200, session
        if method == "GET" and (m := re.fullmatch(r"/v1/checkout/sessions/([^/]+)", path)):
            found = self.sessions.get(m.group(1))
            return (200, found) if found else (404, _missing("checkout.session", m.group(1)))
        if method == "POST" and path == "/v1/billing_portal/sessions":
            if params.get("customer") not in self.customers:
                return 400, _error("No such customer", "invalid_request_error")
            portal_id = self.new_id("bps")
            return 200, {
                "id": portal_id,
                "object": "billing_portal.session",
                "customer": params["customer"],
                "url": f"{self.url}/portal/{portal_id}",
                "return_url": params.get("return_url"),
            }
        if method == "GET" and (m := re.fullmatch(r"/v1/subscriptions/([^/]+)", path)):
            found = self.subscriptions.get(m.group(1))
            return (200, found) if found else (404, _missing("subscription", m.group(1)))
        return 404, _error(f"Unrecognized request URL ({method}: {path})", "invalid_request_error")


def _error(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    error = {"message": message, "type": kind}
    if code:
        error["code"] = code
    return {"error": error}


def _missing(what: str, ident: str) -> dict[str, Any]:
    return _error(f"No such {what}: '{ident}'", "invalid_request_error", "resource_missing")


async def serve_fake_stripe(nursery: trio.Nursery, api_key: str) -> tuple[FakeStripe, trio.Event]:
    """Serve a FakeStripe on an ephemeral loopback port; set the event to stop it."""
    fake = FakeStripe(api_key=api_key)
    config = loopback_config()
    stop = trio.Event()
    binds = await nursery.start(
        lambda task_status: serve(fake, config, shutdown_trigger=stop.wait, task_status=task_status)
    )
    fake.url = binds[0]
    return fake, stop
