"""The verification example in docs/notifications.md verifies what the service signs, and
refuses a forgery, a replay and a stale timestamp: the documentation stays true."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from engine.notifications import (
    new_signing_secret,
    rotate_signing_secret,
    signing_secrets,
    webhook_headers,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "notifications.md"


def _verify() -> Any:
    text = DOC.read_text()
    [code] = [
        block for block in re.findall(r"```python\n(.*?)```", text, re.S) if "def verify" in block
    ]
    namespace: dict[str, Any] = {}
    exec(compile(code, str(DOC), "exec"), namespace)
    return namespace["verify"]


def test_the_documented_verifier_accepts_ours_and_refuses_the_rest() -> None:
    verify = _verify()
    secret = new_signing_secret()
    body = b'{"type":"test.ping","version":1}'
    headers = webhook_headers(secret, "ntf_1", body)
    seen: set[str] = set()
    assert verify(secret, headers, body, seen)
    assert not verify(secret, headers, body, seen)  # the same id again: a replay
    assert not verify(secret, headers, body + b" ", set())  # the body changed
    assert not verify(new_signing_secret(), headers, body, set())  # another secret
    stale = webhook_headers(secret, "ntf_2", body, timestamp=int(time.time()) - 3600)
    assert not verify(secret, stale, body, set())


def test_during_a_rotation_both_secrets_verify() -> None:
    verify = _verify()
    old = {"url": "https://hooks.example.com/x", "signing_secret": new_signing_secret()}
    rotated = rotate_signing_secret(old)
    body = b"{}"
    headers = webhook_headers(signing_secrets(rotated), "ntf_3", body)
    assert verify(old["signing_secret"], headers, body, set())
    assert verify(rotated["signing_secret"], headers, body, set())
