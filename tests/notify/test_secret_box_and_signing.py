"""Channel secrets sealed at rest, and Standard Webhooks signatures checked by an independent
verifier (the `standardwebhooks` package)."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from engine.notifications import (
    BadSecretBox,
    BadSigningSecret,
    SecretBox,
    new_signing_secret,
    rotate_signing_secret,
    sign,
    signing_secrets,
    webhook_headers,
)

SECRETS = {"bot_token": "123456:" + "A" * 35, "chat_id": -1001234567890}


def test_a_sealed_box_opens_to_what_went_in_and_hides_it() -> None:
    box = SecretBox("service secret key")
    sealed = box.seal(SECRETS)
    assert SECRETS["bot_token"] not in sealed and "chat_id" not in sealed
    assert box.open(sealed) == SECRETS
    assert box.seal(SECRETS) != sealed  # a fresh IV each time
    assert SecretBox("service secret key").open(sealed) == SECRETS  # derived, not random


def test_a_tampered_box_or_another_key_does_not_open() -> None:
    box = SecretBox("service secret key")
    sealed = box.seal(SECRETS)
    raw = bytearray(base64.urlsafe_b64decode(sealed))
    raw[40] ^= 0x01  # one bit of the ciphertext
    tampered = base64.urlsafe_b64encode(bytes(raw)).decode()
    with pytest.raises(BadSecretBox):
        box.open(tampered)
    with pytest.raises(BadSecretBox):
        SecretBox("another key").open(sealed)
    for garbage in ("", "not a box", "é"):
        with pytest.raises(BadSecretBox):
            box.open(garbage)


def test_a_new_signing_secret_is_whsec_and_24_random_bytes() -> None:
    secret = new_signing_secret()
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 24
    assert new_signing_secret() != secret
    with pytest.raises(BadSigningSecret):
        sign("whsec_c2hvcnQ=", "msg", 1, b"{}")  # five bytes: too short a key


def test_our_signature_is_the_one_standardwebhooks_computes_and_verifies() -> None:
    secret = new_signing_secret()
    body = json.dumps({"type": "listing.deal", "title": "Jeans «501» €12"}).encode()
    headers = webhook_headers(secret, "ntf_abc", body)
    assert Webhook(secret).verify(body, headers) == json.loads(body)
    when = datetime.fromtimestamp(1_700_000_000, UTC)
    assert sign(secret, "ntf_abc", 1_700_000_000, body) == Webhook(secret).sign(
        "ntf_abc", when, body.decode()
    )


def test_standardwebhooks_rejects_forged_altered_and_stale_messages() -> None:
    secret = new_signing_secret()
    body = b'{"type":"test.ping"}'
    headers = webhook_headers(secret, "ntf_1", body)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_signing_secret()).verify(body, headers)  # forged: another key
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(b'{"type":"test.pong"}', headers)  # altered body
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body, {**headers, "webhook-id": "ntf_2"})  # id swapped
    stale = webhook_headers(secret, "ntf_1", body, timestamp=int(time.time()) - 600)
    with pytest.raises(WebhookVerificationError, match="too old"):
        Webhook(secret).verify(body, stale)  # replayed ten minutes later


def test_while_a_rotation_overlaps_both_secrets_sign() -> None:
    old = {"url": "https://hooks.example.com/x", "signing_secret": new_signing_secret()}
    rotated = rotate_signing_secret(old, overlap_seconds=3600, now=1000.0)
    assert rotated["signing_secret"] != old["signing_secret"]
    assert signing_secrets(rotated, now=1000.0) == [
        rotated["signing_secret"],
        old["signing_secret"],
    ]
    assert signing_secrets(rotated, now=1000.0 + 3601) == [rotated["signing_secret"]]
    body = b"{}"
    headers = webhook_headers(signing_secrets(rotated, now=1000.0), "ntf_9", body)
    assert len(headers["webhook-signature"].split(" ")) == 2
    Webhook(old["signing_secret"]).verify(body, headers)  # a receiver not yet switched
    Webhook(rotated["signing_secret"]).verify(body, headers)  # and one already switched
