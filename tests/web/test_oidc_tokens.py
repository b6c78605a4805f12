"""ID-token verification against a real (tiny) provider on loopback: discovery and JWKS over
HTTP, tokens signed here with keys the provider publishes or does not."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from werkzeug.serving import make_server

from api.http.security import TokenHasher
from api.web.oidc import OidcClient, OidcConfig, OidcError, PendingSignIn, pkce_challenge

CLIENT_ID = "nichescope"
NONCE = "the-nonce"


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class TinyProvider:
    """Discovery and JWKS only: enough to verify tokens; `keys` can change (rotation)."""

    issuer: str = ""
    advertised_issuer: str | None = None
    keys: dict[str, rsa.RSAPrivateKey] = field(default_factory=dict)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        if environ["PATH_INFO"] == "/.well-known/openid-configuration":
            body: dict[str, Any] = {
                "issuer": self.advertised_issuer or self.issuer,
                "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token",
                "jwks_uri": f"{self.issuer}/jwks",
            }
        elif environ["PATH_INFO"] == "/jwks":
            body = {
                "keys": [
                    {**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(k.public_key())), "kid": kid}
                    for kid, k in self.keys.items()
                ]
            }
        else:
            start_response("404 Not Found", [])
            return [b""]
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(body).encode()]

    def sign(self, kid: str, key: rsa.RSAPrivateKey | None = None, **overrides: Any) -> str:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "aud": CLIENT_ID,
            "sub": "subject-1",
            "iat": now,
            "exp": now + 300,
            "nonce": NONCE,
            "email": "person@example.com",
            "email_verified": True,
        }
        claims.update(overrides)
        claims = {k: v for k, v in claims.items() if v is not None}
        return jwt.encode(claims, key or self.keys[kid], algorithm="RS256", headers={"kid": kid})


@pytest.fixture
def provider() -> Iterator[TinyProvider]:
    tiny = TinyProvider(keys={"k1": _key()})
    server = make_server("127.0.0.1", 0, tiny, threaded=True)
    tiny.issuer = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield tiny
    finally:
        server.shutdown()
        thread.join(timeout=5)
        server.server_close()


def client_for(provider: TinyProvider) -> OidcClient:
    return OidcClient(OidcConfig(provider.issuer, CLIENT_ID, "secret", "http://app/callback"))


async def test_a_good_token_gives_the_identity(provider: TinyProvider) -> None:
    found = await client_for(provider).verify_id_token(provider.sign("k1"), nonce=NONCE)
    assert found.subject == "subject-1"
    assert found.email == "person@example.com" and found.email_verified


async def test_email_verified_must_be_a_real_true(provider: TinyProvider) -> None:
    token = provider.sign("k1", email_verified="true")
    assert not (await client_for(provider).verify_id_token(token, nonce=NONCE)).email_verified


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"aud": "someone-else"}, id="audience"),
        pytest.param({"iss": "http://evil.example"}, id="issuer"),
        pytest.param({"exp": int(time.time()) - 3600}, id="expired"),
        pytest.param({"nonce": "replayed"}, id="nonce"),
        pytest.param({"nonce": None}, id="no-nonce"),
        pytest.param({"aud": [CLIENT_ID, "other"], "azp": "other"}, id="azp"),
    ],
)
async def test_bad_claims_are_refused(provider: TinyProvider, overrides: dict[str, Any]) -> None:
    with pytest.raises(OidcError):
        await client_for(provider).verify_id_token(provider.sign("k1", **overrides), nonce=NONCE)


async def test_bad_signatures_and_algorithms_are_refused(provider: TinyProvider) -> None:
    client = client_for(provider)
    forged = provider.sign("k1", key=_key())
    unsigned = jwt.encode({"sub": "x", "nonce": NONCE}, None, algorithm="none")  # type: ignore[arg-type]
    hmac_signed = jwt.encode({"sub": "x", "nonce": NONCE}, "s" * 32, algorithm="HS256")
    for token in (forged, unsigned, hmac_signed, "not-a-jwt"):
        with pytest.raises(OidcError):
            await client.verify_id_token(token, nonce=NONCE)


async def test_rotated_keys_are_fetched_again(provider: TinyProvider) -> None:
    client = client_for(provider)
    await client.verify_id_token(provider.sign("k1"), nonce=NONCE)  # caches k1
    provider.keys["k2"] = _key()
    assert (await client.verify_id_token(provider.sign("k2"), nonce=NONCE)).subject
    with pytest.raises(OidcError):  # still unknown after a refetch
        await client.verify_id_token(provider.sign("k3", key=_key()), nonce=NONCE)


async def test_discovery_must_name_the_configured_issuer(provider: TinyProvider) -> None:
    provider.advertised_issuer = "http://impostor.example"
    with pytest.raises(OidcError, match="misconfigured"):
        await client_for(provider).metadata()


async def test_authorization_url_carries_state_nonce_and_s256(provider: TinyProvider) -> None:
    pending = PendingSignIn.new("/dashboard")
    url = await client_for(provider).authorization_url(pending)
    assert url.startswith(f"{provider.issuer}/authorize?response_type=code&")
    assert f"state={pending.state}" in url and f"nonce={pending.nonce}" in url
    assert f"code_challenge={pkce_challenge(pending.verifier)}" in url
    assert "code_challenge_method=S256" in url
    assert 43 <= len(pending.verifier) <= 128


def test_pending_sign_in_cookie_is_tamper_proof() -> None:
    hasher = TokenHasher("k")
    pending = PendingSignIn.new("/account/keys")
    assert PendingSignIn.unseal(pending.seal(hasher), hasher) == pending
    payload, _, signature = pending.seal(hasher).partition(".")
    for forged in ("", payload, f"{payload}x.{signature}", pending.seal(TokenHasher("other"))):
        with pytest.raises(OidcError):
            PendingSignIn.unseal(forged, hasher)
