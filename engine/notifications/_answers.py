"""One POST to a destination, and what its answer means: delivered, retry later, or never.

`post` never raises for a failed delivery: a timeout (at the call site, `trio.fail_after`), a
refused or broken connection, a redirect and every status become a `SendResult` in words.
Only cancellation propagates. Answers are read to at most `MAX_ANSWER_BYTES`: a destination
cannot make us hold a large body.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import httpx
import trio

from scrapers import UrlRefused, parse_retry_after

MAX_ANSWER_BYTES = 64 * 1024
RETRYABLE_STATUSES = frozenset({408, 425, 429})


@dataclass(frozen=True, slots=True)
class SendResult:
    """What one delivery attempt of one batch came to.

    `retry_after`: seconds the destination asked us to wait (429 Retry-After); None when it
    did not say. `permanent`: retrying can never succeed (wrong token, deleted webhook): fail
    the notifications now. `delivered`: ids of the batch that did reach the destination (all
    of them when `ok`; a webhook batch that failed part-way lists those sent before).
    """

    ok: bool
    status_code: int | None
    retry_after: float | None
    error: str | None
    permanent: bool = False
    delivered: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Answer:
    """A destination's answer, its body read up to the cap."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    truncated: bool

    def json(self) -> Any:
        """The decoded body, or None when it is not (complete) JSON."""
        if self.truncated:
            return None
        try:
            return json.loads(self.body)
        except (ValueError, UnicodeDecodeError):
            return None


Scrub = Callable[[str], str]
"""Removes secrets (a bot token in a URL) from a text before it is kept as an error."""


def _keep(text: str) -> str:
    return text


async def post(
    http: httpx.AsyncClient,
    url: str,
    *,
    content: bytes,
    headers: Mapping[str, str],
    who: str,
    send_timeout: float,
    scrub: Scrub = _keep,
) -> Answer | SendResult:
    """POST `content` to `url`: the `Answer`, or a failed (retryable) `SendResult` when none
    came: `who` names the destination in the error, never its URL (URLs carry tokens)."""
    try:
        with trio.fail_after(send_timeout):
            async with http.stream("POST", url, content=content, headers=dict(headers)) as r:
                body, truncated = await _read_bounded(r)
                return Answer(r.status_code, dict(r.headers), body, truncated)
    except (trio.TooSlowError, httpx.TimeoutException):
        return failed(f"{who} did not answer within {send_timeout:g} s")
    except UrlRefused as err:
        # The guard refused the socket: the host now resolves to a non-public address.
        return failed(f"{who} was not contacted: {err.reason}")
    except httpx.HTTPError as err:
        detail = str(err) or type(err).__name__
        return failed(scrub(f"could not reach {who}: {detail}"))
    except OSError as err:
        return failed(scrub(f"could not reach {who}: {err}"))


async def _read_bounded(response: httpx.Response) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            # The rest is never read; closing the stream drops the connection.
            return b"".join(chunks)[:MAX_ANSWER_BYTES], True
    return b"".join(chunks), False


def failed(
    error: str,
    *,
    status: int | None = None,
    retry_after: float | None = None,
    permanent: bool = False,
    delivered: tuple[str, ...] = (),
) -> SendResult:
    return SendResult(False, status, retry_after, error, permanent, delivered)


def reason_phrase(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def header_retry_after(answer: Answer) -> float | None:
    """Seconds from a `Retry-After` header (seconds or an HTTP date), or None."""
    return parse_retry_after(answer.headers.get("retry-after"))


def classify(
    answer: Answer,
    *,
    who: str,
    detail: str | None = None,
    retry_after: float | None = None,
    delivered: tuple[str, ...] = (),
) -> SendResult:
    """The common rule: 2xx ok; 3xx failed (redirects are never followed); 408, 425, 429 and
    5xx retry (429 with the destination's `retry_after`, else its Retry-After header); any
    other 4xx is permanent. `detail` is what the destination said, in its words."""
    status = answer.status
    said = f": {detail}" if detail else ""
    if 200 <= status < 300:
        return SendResult(True, status, None, None, False, delivered)
    if 300 <= status < 400:
        location = answer.headers.get("location", "")
        where = f" to {location[:200]}" if location else ""
        return failed(
            f"{who} answered {reason_phrase(status)}, a redirect{where}; redirects are not "
            "followed, so give the final URL",
            status=status,
            delivered=delivered,
        )
    if status in RETRYABLE_STATUSES or status >= 500:
        wait = retry_after if retry_after is not None else header_retry_after(answer)
        return failed(
            f"{who} answered {reason_phrase(status)}{said}",
            status=status,
            retry_after=wait if status in (429, 503) else None,
            delivered=delivered,
        )
    return failed(
        f"{who} answered {reason_phrase(status)}{said}",
        status=status,
        permanent=True,
        delivered=delivered,
    )
