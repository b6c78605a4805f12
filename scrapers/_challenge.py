"""Telling a browser challenge from a block.

Since September 2026 the site's `www` origin answers plain HTTP clients with a JavaScript
challenge (MARKETPLACE.md): `403`, `cf-mitigated: challenge`, `Server: cloudflare`. That is the
site asking for a browser, not refusing us: it must never pause an origin or count as a breaker
failure. Another bot-protection vendor would send its own page without that header, so a page
is also a challenge when it carries a known challenge vendor's marks where content was
expected. A plain "access denied" page without such marks stays a block.

Only the first bytes are looked at: a challenge page is small, and this runs on every refused
answer.
"""

from __future__ import annotations

from collections.abc import Mapping

# Marks of challenge pages (lower case), by vendor: Cloudflare's managed challenge and its
# legacy "checking your browser", DataDome, PerimeterX/HUMAN, Imperva/Incapsula, Akamai.
_MARKS: tuple[bytes, ...] = (
    b"cf_chl", b"challenge-platform", b"cf-challenge", b"just a moment...",
    b"checking your browser", b"captcha-delivery.com", b"datadome", b"px-captcha",
    b"_pxhd", b"_incapsula_resource", b"incap_ses", b"_abck", b"sec-if-cpt",
)  # fmt: skip
_SCANNED_BYTES = 16_384
_CHALLENGE_STATUSES = frozenset({403, 429, 503})


def is_challenge(
    status: int, headers: Mapping[str, str], body: bytes, *, json_expected: bool
) -> bool:
    """Whether an answer is a browser challenge rather than data or a block.

    `headers` are looked up in lower case. With `json_expected`, an HTML challenge page
    served with a 2xx is recognised too. A 2xx HTML page is never judged here: real item
    pages carry challenge-platform scripts of their own; the profile's parser decides.
    """
    if headers.get("cf-mitigated", "").strip().lower() == "challenge":
        return True
    if status not in _CHALLENGE_STATUSES and not (json_expected and 200 <= status < 300):
        return False
    if "html" not in headers.get("content-type", "html").lower():
        return False
    head = body[:_SCANNED_BYTES].lower()
    return any(mark in head for mark in _MARKS)
