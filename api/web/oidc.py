"""OpenID Connect sign-in, relying-party side: authorization code flow with PKCE (S256).

Configured by `NICHESCOPE_OIDC_ISSUER`, `NICHESCOPE_OIDC_CLIENT_ID` and
`NICHESCOPE_OIDC_CLIENT_SECRET`. The provider is discovered at
`{issuer}/.well-known/openid-configuration`; ID tokens are verified with PyJWT against the
provider's JWKS: signature (asymmetric algorithms only), `iss`, `aud` (and `azp` when there are
several audiences), `exp`/`iat` and the `nonce` of this browser's sign-in attempt.

State, nonce and PKCE verifier live in a short-lived HttpOnly cookie signed with the service
secret (`PendingSignIn`), so any node of a cluster can finish a sign-in another node started.

Every failure raises `OidcError` carrying a sentence for the person; network calls are bounded
by `trio.fail_after` and cancellation propagates untouched.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
import jwt
import trio

from api.http.security import TokenHasher

HTTP_TIMEOUT_SECONDS = 10.0
METADATA_TTL_SECONDS = 3600.0
PENDING_MAX_AGE_SECONDS = 600
CLOCK_LEEWAY_SECONDS = 60
SCOPES = "openid email profile"
# Asymmetric only: "none" and HMAC algorithms (keyed by the client secret) are refused.
ALLOWED_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384")


class OidcError(Exception):
    """A sign-in through the identity provider failed; `message` is for the person."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(f"{message} ({detail})" if detail else message)
        self.message = message
        self.detail = detail


@dataclass(frozen=True, slots=True)
class OidcConfig:
    issuer: str
    client_id: str
    client_secret: str
    redirect_uri: str


@dataclass(frozen=True, slots=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str


@dataclass(frozen=True, slots=True)
class Identity:
    """What a verified ID token says about the person."""

    subject: str
    email: str | None
    email_verified: bool
    name: str | None


@dataclass(frozen=True, slots=True)
class PendingSignIn:
    """One browser's sign-in attempt, between the redirect out and the callback."""

    state: str
    nonce: str
    verifier: str
    next_path: str
    created_at: int

    @classmethod
    def new(cls, next_path: str) -> PendingSignIn:
        return cls(
            state=secrets.token_urlsafe(32),
            nonce=secrets.token_urlsafe(32),
            # 64 random bytes -> 86 characters, inside RFC 7636's 43..128.
            verifier=secrets.token_urlsafe(64),
            next_path=next_path,
            created_at=int(time.time()),
        )

    def seal(self, hasher: TokenHasher) -> str:
        payload = base64.urlsafe_b64encode(
            json.dumps(
                [self.state, self.nonce, self.verifier, self.next_path, self.created_at]
            ).encode()
        ).decode()
        return f"{payload}.{hasher.digest('oidc-pending:' + payload)}"

    @classmethod
    def unseal(cls, sealed: str, hasher: TokenHasher) -> PendingSignIn:
        """The attempt in a cookie value; `OidcError` if absent, forged or too old."""
        payload, _, signature = sealed.partition(".")
        if not payload or not hasher.matches("oidc-pending:" + payload, signature):
            raise OidcError("This sign-in attempt was not started here, or it expired. Try again.")
        try:
            state, nonce, verifier, next_path, created_at = json.loads(
                base64.urlsafe_b64decode(payload.encode())
            )
        except (ValueError, TypeError) as err:  # signed by us, so only a key change gets here
            raise OidcError("This sign-in attempt expired. Please start again.") from err
        if time.time() - int(created_at) > PENDING_MAX_AGE_SECONDS:
            raise OidcError("This sign-in attempt took too long. Please start again.")
        return cls(str(state), str(nonce), str(verifier), str(next_path), int(created_at))


def pkce_challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class OidcClient:
    """Talks to one provider; caches its metadata and keys (refetched on an unknown key id)."""

    def __init__(self, config: OidcConfig) -> None:
        self.config = config
        self._metadata: ProviderMetadata | None = None
        self._metadata_at = 0.0
        self._jwks: jwt.PyJWKSet | None = None

    async def _get_json(self, url: str, *, form: dict[str, str] | None = None) -> Any:
        try:
            with trio.fail_after(HTTP_TIMEOUT_SECONDS):
                async with httpx.AsyncClient(follow_redirects=False) as http:
                    if form is None:
                        response = await http.get(url, headers={"Accept": "application/json"})
                    else:
                        response = await http.post(
                            url,
                            data=form,
                            auth=(self.config.client_id, self.config.client_secret),
                            headers={"Accept": "application/json"},
                        )
        except trio.TooSlowError as err:
            raise OidcError("The identity provider did not answer in time.", url) from err
        except httpx.HTTPError as err:
            raise OidcError("The identity provider could not be reached.", repr(err)) from err
        if response.status_code != 200:
            raise OidcError(
                "The identity provider refused the sign-in.",
                f"{url} answered {response.status_code}: {response.text[:300]}",
            )
        try:
            return response.json()
        except ValueError as err:
            raise OidcError("The identity provider sent an unreadable answer.", url) from err

    async def metadata(self) -> ProviderMetadata:
        if self._metadata is not None and trio.current_time() - self._metadata_at < (
            METADATA_TTL_SECONDS
        ):
            return self._metadata
        issuer = self.config.issuer
        document = await self._get_json(issuer.rstrip("/") + "/.well-known/openid-configuration")
        try:
            metadata = ProviderMetadata(
                issuer=str(document["issuer"]),
                authorization_endpoint=str(document["authorization_endpoint"]),
                token_endpoint=str(document["token_endpoint"]),
                jwks_uri=str(document["jwks_uri"]),
            )
        except (KeyError, TypeError) as err:
            raise OidcError("The identity provider is misconfigured.", repr(err)) from err
        if metadata.issuer != issuer:
            # OpenID Connect Discovery 1.0, section 4.3: they must be identical.
            raise OidcError(
                "The identity provider is misconfigured.",
                f"discovery issuer {metadata.issuer!r} is not {issuer!r}",
            )
        self._metadata, self._metadata_at = metadata, trio.current_time()
        return metadata

    async def authorization_url(self, pending: PendingSignIn) -> str:
        metadata = await self.metadata()
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.config.client_id,
                "redirect_uri": self.config.redirect_uri,
                "scope": SCOPES,
                "state": pending.state,
                "nonce": pending.nonce,
                "code_challenge": pkce_challenge(pending.verifier),
                "code_challenge_method": "S256",
            }
        )
        separator = "&" if "?" in metadata.authorization_endpoint else "?"
        return f"{metadata.authorization_endpoint}{separator}{query}"

    async def finish(self, pending: PendingSignIn, *, state: str, code: str) -> Identity:
        """Check `state`, redeem `code` with the PKCE verifier, verify the ID token."""
        if not state or not hmac.compare_digest(state, pending.state):
            raise OidcError("This sign-in attempt does not match the one started here. Try again.")
        metadata = await self.metadata()
        tokens = await self._get_json(
            metadata.token_endpoint,
            form={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": self.config.redirect_uri,
                "code_verifier": pending.verifier,
                "client_id": self.config.client_id,
            },
        )
        id_token = tokens.get("id_token") if isinstance(tokens, dict) else None
        if not isinstance(id_token, str):
            raise OidcError("The identity provider sent no identity.", "no id_token")
        return await self.verify_id_token(id_token, nonce=pending.nonce)

    async def _signing_key(self, kid: str | None, *, refresh: bool) -> jwt.PyJWK:
        if self._jwks is None or refresh:
            metadata = await self.metadata()
            try:
                self._jwks = jwt.PyJWKSet.from_dict(await self._get_json(metadata.jwks_uri))
            except jwt.PyJWTError as err:
                raise OidcError("The identity provider's keys are unusable.", repr(err)) from err
        keys = self._jwks.keys
        if kid is None and len(keys) == 1:
            return keys[0]
        for key in keys:
            if key.key_id == kid:
                return key
        if not refresh:  # the provider may have rotated its keys since we fetched them
            return await self._signing_key(kid, refresh=True)
        raise OidcError("The identity could not be verified.", f"unknown key id {kid!r}")

    async def verify_id_token(self, id_token: str, *, nonce: str) -> Identity:
        try:
            header = jwt.get_unverified_header(id_token)
        except jwt.PyJWTError as err:
            raise OidcError("The identity could not be verified.", repr(err)) from err
        algorithm = header.get("alg")
        if algorithm not in ALLOWED_ALGORITHMS:
            raise OidcError("The identity could not be verified.", f"algorithm {algorithm!r}")
        key = await self._signing_key(header.get("kid"), refresh=False)
        metadata = await self.metadata()
        try:
            claims: dict[str, Any] = jwt.decode(
                id_token,
                key.key,
                algorithms=[algorithm],
                audience=self.config.client_id,
                issuer=metadata.issuer,
                leeway=CLOCK_LEEWAY_SECONDS,
                options={"require": ["iss", "aud", "exp", "iat", "sub"]},
            )
        except jwt.PyJWTError as err:
            raise OidcError("The identity could not be verified.", repr(err)) from err
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != self.config.client_id:
            raise OidcError("The identity could not be verified.", "azp is not this client")
        token_nonce = claims.get("nonce")
        if not isinstance(token_nonce, str) or not hmac.compare_digest(token_nonce, nonce):
            raise OidcError("The identity could not be verified.", "nonce mismatch")
        email = claims.get("email")
        name = claims.get("name")
        return Identity(
            subject=str(claims["sub"]),
            email=email if isinstance(email, str) and email else None,
            # Only a real JSON true counts: some providers send strings, which we do not trust.
            email_verified=claims.get("email_verified") is True,
            name=name if isinstance(name, str) and name else None,
        )
