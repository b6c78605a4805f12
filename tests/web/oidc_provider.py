"""A real OpenID Connect provider on loopback for the sign-in tests.

`oidc-provider-mock` (a Flask app: discovery, authorize form, token, JWKS, RS256 ID tokens,
nonce required) served by werkzeug in a thread. It does not check PKCE, so a small WSGI layer
in front of it does, as a real provider would: it remembers the `code_challenge` of each
authorization code it hands out and refuses a token request whose `code_verifier` does not
hash to it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from werkzeug.serving import make_server

with warnings.catch_warnings():
    # The package imports authlib.jose, which warns about its own deprecation; authlib sets
    # an "always" filter for its warnings on import, so ours goes in front of it, here.
    import authlib.deprecate

    warnings.simplefilter("ignore", authlib.deprecate.AuthlibDeprecationWarning)
    import oidc_provider_mock


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass
class PkceEnforcer:
    app: Any
    challenges: dict[str, tuple[str, str]] = field(default_factory=dict)
    verified: int = 0
    refused: int = 0

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "")
        if path == "/oauth2/authorize" and method == "POST":
            query = parse_qs(environ.get("QUERY_STRING", ""))
            challenge = query.get("code_challenge", [""])[0]
            challenge_method = query.get("code_challenge_method", [""])[0]

            def remember(status: str, headers: list[tuple[str, str]], *exc: Any) -> Any:
                for name, value in headers:
                    if name.lower() == "location":
                        code = parse_qs(urlsplit(value).query).get("code", [""])[0]
                        if code:
                            self.challenges[code] = (challenge, challenge_method)
                return start_response(status, headers, *exc)

            return self.app(environ, remember)  # type: ignore[no-any-return]
        if path == "/oauth2/token" and method == "POST":
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(body)
            form = parse_qs(body.decode())
            code = form.get("code", [""])[0]
            verifier = form.get("code_verifier", [""])[0]
            challenge, challenge_method = self.challenges.pop(code, ("", ""))
            if not challenge or challenge_method != "S256" or _s256(verifier) != challenge:
                self.refused += 1
                payload = json.dumps({"error": "invalid_grant", "error_description": "PKCE"})
                start_response("400 Bad Request", [("Content-Type", "application/json")])
                return [payload.encode()]
            self.verified += 1
        return self.app(environ, start_response)  # type: ignore[no-any-return]


@dataclass
class LocalOidcProvider:
    issuer: str
    pkce: PkceEnforcer


@contextmanager
def run_provider() -> Iterator[LocalOidcProvider]:
    pkce = PkceEnforcer(oidc_provider_mock.app(require_nonce=True))
    server = make_server("127.0.0.1", 0, pkce, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield LocalOidcProvider(issuer=f"http://127.0.0.1:{server.server_port}", pkce=pkce)
    finally:
        server.shutdown()
        thread.join(timeout=5)
        server.server_close()
