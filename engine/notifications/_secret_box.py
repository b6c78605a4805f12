"""Channel secrets at rest: bot tokens, webhook URLs and signing secrets, sealed with Fernet.

The store keeps only the sealed text (`notification_channels.secret_box`). The Fernet key is
derived from the service's secret key with HKDF-SHA256, so no second key has to be managed,
and a different `info` keeps this key apart from every other use of the secret key. Changing
the service's secret key makes every sealed box unreadable (`BadSecretBox`): channels then
have to be set up again, as with every other secret keyed by it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

_INFO = b"nichescope notification secrets"


class BadSecretBox(Exception):
    """A sealed box that does not open: tampered with, truncated, or sealed under another key."""

    def __init__(self, reason: str = "the sealed secrets do not open") -> None:
        super().__init__(reason)
        self.reason = reason


class SecretBox:
    """Seals a JSON object of secrets into text and opens it again.

    `seal` and `open` are pure CPU work (microseconds): safe to call from async code.
    """

    __slots__ = ("_fernet",)

    def __init__(self, secret_key: str, *, purpose: bytes = _INFO) -> None:
        """`purpose` keeps the keys of different uses apart (HKDF's `info`): a box sealed
        for one purpose never opens for another."""
        if not secret_key:
            raise ValueError("SecretBox needs a non-empty secret key")
        key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose).derive(
            secret_key.encode()
        )
        self._fernet = Fernet(base64.urlsafe_b64encode(key))

    def __repr__(self) -> str:  # never show key material in logs
        return "SecretBox(…)"

    def seal(self, secrets: Mapping[str, Any]) -> str:
        """The sealed text (ASCII) of `secrets`, a JSON-serialisable mapping.

        A fresh random IV each time: sealing the same secrets twice gives different text.
        Raises `TypeError` for values JSON cannot carry.
        """
        plain = json.dumps(dict(secrets), separators=(",", ":"), sort_keys=True)
        return self._fernet.encrypt(plain.encode()).decode("ascii")

    def open(self, box: str) -> dict[str, Any]:
        """The secrets sealed in `box`; `BadSecretBox` if it was altered or is not ours."""
        try:
            plain = self._fernet.decrypt(box.encode("ascii"))
        except (InvalidToken, UnicodeEncodeError, AttributeError) as err:
            raise BadSecretBox() from err
        try:
            value = json.loads(plain)
        except ValueError as err:  # authentic but not JSON: sealed by something else of ours
            raise BadSecretBox("the sealed secrets are not a JSON object") from err
        if not isinstance(value, dict):
            raise BadSecretBox("the sealed secrets are not a JSON object")
        return value
