"""Loopback fakes of the notification destinations, speaking their real wire formats.

- `FakeTelegram`: the Bot API's `POST /bot<token>/sendMessage` (JSON), with Telegram's
  checks of HTML parse mode (only its tags; `<`, `>` and `&` escaped) and the 4096-character
  limit, answering `{"ok": true, "result": {...}}` or Telegram's error objects.
- `FakeDiscord`: `POST /api/webhooks/<id>/<token>` (204, or 200 with the message under
  `?wait=true`), with Discord's embed limits, 401/404 for a wrong token or id, 429 with
  `retry_after` in seconds (a float).
- `WebhookReceiver`: a Standard Webhooks receiver verifying every request with the
  independent `standardwebhooks` package, refusing forged and replayed ones.

Each is an ASGI app served by hypercorn on an ephemeral 127.0.0.1 port:
`async with FakeTelegram(token) as telegram:` (its `url` is set once it listens) or
`url = await nursery.start(fake.serve)`. Tests script trouble with `answer_next` (any
answer for the next k requests), `hang_next` (no answer until the fake stops: timeouts)
and the fakes' own helpers (`rate_limit`, `fail_next`), and wait for what happened with
`await fake.wait_until(lambda: ..., within=...)`, never with fixed sleeps.
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
import time
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qsl

import trio
from hypercorn.trio import serve
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.asgi import Receive, Scope, Send, lifespan, loopback_config, read_body, respond
from tests.notify.wire_rules import EntityError, discord_form_errors, telegram_visible_text

MAX_BODY = 1 << 20


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of_json(cls, status: int, data: Any, headers: Sequence[tuple[str, str]] = ()) -> Reply:
        return cls(
            status, json.dumps(data).encode(), (("content-type", "application/json"), *headers)
        )


_HANG = Reply(0)  # a scripted "never answer"


class _Fake:
    """ASGI plumbing, scripted answers, and serving on loopback (see the module doc)."""

    def __init__(self) -> None:
        self.url = ""
        self.requests: list[Request] = []
        self._script: deque[Reply] = deque()
        self._changed = trio.Event()
        self._release = trio.Event()
        self._stack: AsyncExitStack | None = None

    # -- what tests call --------------------------------------------------------------------

    def answer_next(self, reply: Reply, times: int = 1) -> None:
        """Answer the next `times` requests with `reply`, whatever they ask."""
        self._script.extend([reply] * times)

    def hang_next(self, times: int = 1) -> None:
        """Read the next `times` requests and never answer them (until the fake stops)."""
        self._script.extend([_HANG] * times)

    async def wait_until(self, condition: Callable[[], bool], within: float = 10.0) -> None:
        """Return once `condition()` holds (checked after each request); `trio.TooSlowError`
        after `within` seconds."""
        with trio.fail_after(within):
            while not condition():
                await self._changed.wait()

    def handle(self, request: Request) -> Reply:
        raise NotImplementedError

    # -- serving -------------------------------------------------------------------------------

    async def serve(self, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; `task_status.started(url)` once listening."""
        config = loopback_config()
        config.errorlog = None
        stop = trio.Event()
        try:
            async with trio.open_nursery() as nursery:
                binds = await nursery.start(
                    lambda task_status: serve(
                        self,  # type: ignore[arg-type]  # an ASGI app typed with plain dicts
                        config,
                        shutdown_trigger=stop.wait,
                        task_status=task_status,
                    )
                )
                self.url = binds[0]
                task_status.started(self.url)
                await trio.sleep_forever()
        finally:
            self._release.set()

    async def __aenter__(self) -> Self:
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            nursery = await stack.enter_async_context(trio.open_nursery())
            await nursery.start(self.serve)
            stack.callback(nursery.cancel_scope.cancel)
            stack.callback(self._release.set)  # hanging handlers finish before the server
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._stack is not None
        return await self._stack.__aexit__(exc_type, exc, tb)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        body = await read_body(receive, limit=MAX_BODY)
        request = Request(
            method=scope["method"],
            path=scope["path"],
            query=dict(parse_qsl(scope["query_string"].decode())),
            headers={k.decode().lower(): v.decode() for k, v in scope["headers"]},
            body=body,
        )
        self.requests.append(request)
        reply = self._script.popleft() if self._script else None
        if reply is _HANG:
            self._notify()
            await self._release.wait()
            reply = Reply(503)
        elif reply is None:
            reply = self.handle(request)
        headers = [(k.encode(), v.encode()) for k, v in reply.headers]
        await respond(send, reply.status, headers, reply.body)
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()


# -- Telegram ---------------------------------------------------------------------------------


def _tg_error(code: int, description: str, **parameters: Any) -> Reply:
    data: dict[str, Any] = {"ok": False, "error_code": code, "description": description}
    if parameters:
        data["parameters"] = parameters
    return Reply.of_json(code, data)


class FakeTelegram(_Fake):
    """The Bot API for one bot token; `messages` holds the accepted sendMessage bodies."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token
        self.messages: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    def rate_limit(self, times: int = 1, retry_after: int = 3) -> None:
        """The next `times` requests get 429 with `parameters.retry_after`."""
        reply = _tg_error(
            429, f"Too Many Requests: retry after {retry_after}", retry_after=retry_after
        )
        self.answer_next(reply, times)

    def fail_next(self, times: int = 1, status: int = 502) -> None:
        self.answer_next(_tg_error(status, "Bad Gateway" if status == 502 else "Internal"), times)

    def handle(self, request: Request) -> Reply:
        match = re.fullmatch(r"/bot([^/]+)/([A-Za-z]+)", request.path)
        if match is None:
            return _tg_error(404, "Not Found")
        if match.group(1) != self.token:
            return _tg_error(401, "Unauthorized")
        if request.method != "POST" or match.group(2) != "sendMessage":
            return _tg_error(404, "Not Found")
        try:
            body = request.json()
        except ValueError:
            return _tg_error(400, "Bad Request: message text is empty")
        if not isinstance(body, dict) or body.get("chat_id") in (None, ""):
            return _tg_error(400, "Bad Request: chat_id is empty")
        text = body.get("text")
        if not isinstance(text, str) or not text.strip():
            return _tg_error(400, "Bad Request: message text is empty")
        visible = text
        if body.get("parse_mode") == "HTML":
            try:
                visible = telegram_visible_text(text)
            except EntityError as err:
                return _tg_error(400, f"Bad Request: can't parse entities: {err}")
        if len(visible) > 4096:
            return _tg_error(400, "Bad Request: message is too long")
        self.messages.append(body)
        chat_id = body["chat_id"]
        result = {
            "message_id": next(self._ids),
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private" if isinstance(chat_id, int) else "channel"},
            "text": visible,
        }
        return Reply.of_json(200, {"ok": True, "result": result})


# -- Discord ----------------------------------------------------------------------------------


class FakeDiscord(_Fake):
    """One Discord webhook; `messages` holds accepted bodies, `embeds` all their embeds."""

    def __init__(self, webhook_id: str = "112233445566778899", token: str | None = None) -> None:
        super().__init__()
        self.webhook_id = webhook_id
        self.token = token or secrets.token_urlsafe(51)
        self.messages: list[dict[str, Any]] = []
        self.embeds: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    @property
    def webhook_url(self) -> str:
        return f"{self.url}/api/webhooks/{self.webhook_id}/{self.token}"

    def rate_limit(self, times: int = 1, retry_after: float = 1.5) -> None:
        """The next `times` requests get Discord's 429 (JSON `retry_after`, float seconds)."""
        data = {
            "message": "You are being rate limited.",
            "retry_after": retry_after,
            "global": False,
        }
        headers = (
            ("retry-after", str(int(retry_after + 0.999))),
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset-after", str(retry_after)),
        )
        self.answer_next(Reply.of_json(429, data, headers), times)

    def handle(self, request: Request) -> Reply:
        match = re.fullmatch(r"/api/webhooks/(\d+)/([^/]+)", request.path)
        if match is None or request.method != "POST":
            return Reply.of_json(404, {"message": "404: Not Found", "code": 0})
        if match.group(1) != self.webhook_id:
            return Reply.of_json(404, {"message": "Unknown Webhook", "code": 10015})
        if match.group(2) != self.token:
            return Reply.of_json(401, {"message": "Invalid Webhook Token", "code": 50027})
        try:
            body = request.json()
        except ValueError:
            return Reply.of_json(400, {"message": "Cannot send an empty message", "code": 50006})
        errors = discord_form_errors(body)
        if errors:
            return Reply.of_json(
                400, {"message": "Invalid Form Body", "code": 50035, "errors": errors}
            )
        self.messages.append(body)
        self.embeds.extend(body.get("embeds") or [])
        if request.query.get("wait") != "true":
            return Reply(204)
        message = {
            "id": str(next(self._ids)),
            "type": 0,
            "channel_id": "998877665544332211",
            "webhook_id": self.webhook_id,
            "content": body.get("content", ""),
            "embeds": body.get("embeds", []),
        }
        return Reply.of_json(200, message)


# -- Standard Webhooks receiver -----------------------------------------------------------------


@dataclass(frozen=True)
class Accepted:
    id: str
    timestamp: int
    payload: Any
    body: bytes
    headers: dict[str, str]


class WebhookReceiver(_Fake):
    """Accepts only requests `standardwebhooks` verifies under one of `secrets`, with a
    timestamp within `tolerance` seconds and an id not accepted before (a replay gets 409).

    `failing_status` (while set) answers every request with it: an outage, then recovery
    when set back to None. `redirect_to` answers 302 to every request."""

    def __init__(self, secrets: str | Sequence[str], *, tolerance: float = 300.0) -> None:
        super().__init__()
        self.secrets = (secrets,) if isinstance(secrets, str) else tuple(secrets)
        self.tolerance = tolerance
        self.accepted: list[Accepted] = []
        self.rejected: list[tuple[str, Request]] = []
        self.redirect_to: str | None = None
        self.failing_status: int | None = None

    def fail_next(self, times: int = 1, status: int = 500) -> None:
        self.answer_next(Reply.of_json(status, {"error": "receiver is down"}), times)

    def handle(self, request: Request) -> Reply:
        if self.failing_status is not None:
            return Reply.of_json(self.failing_status, {"error": "receiver is down"})
        if self.redirect_to is not None:
            return Reply(302, b"", (("location", self.redirect_to),))
        reason = self._refusal(request)
        if reason is not None:
            self.rejected.append((reason, request))
            return Reply.of_json(409 if reason == "replayed" else 401, {"error": reason})
        headers = request.headers
        self.accepted.append(
            Accepted(
                id=headers["webhook-id"],
                timestamp=int(headers["webhook-timestamp"]),
                payload=json.loads(request.body),
                body=request.body,
                headers=headers,
            )
        )
        return Reply(204)

    def _refusal(self, request: Request) -> str | None:
        if request.method != "POST":
            return "method"
        errors = []
        for secret in self.secrets:
            try:
                Webhook(secret).verify(request.body, request.headers)
            except WebhookVerificationError as err:
                errors.append(str(err))
                continue
            break
        else:
            # The library checks the timestamp (five minutes) before the signature.
            return "timestamp" if any("timestamp" in e for e in errors) else "signature"
        if abs(time.time() - int(request.headers["webhook-timestamp"])) > self.tolerance:
            return "timestamp"
        if any(item.id == request.headers["webhook-id"] for item in self.accepted):
            return "replayed"
        return None
