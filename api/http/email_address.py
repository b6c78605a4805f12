"""The e-mail addresses the service takes, as one rule for the checks and for the document.

The check is `email_validator`'s (through pydantic's `EmailStr`, or the notification
channels' `check_email_address`): a dot-atom before the @, a host name of at least two labels
after it whose last ends with a letter, no label starting `ab--` (but Punycode), at most 64
characters before the @ (`strict`) and 254 in all, and no special-use domain (`.test`, `.local`,
`.localhost`, `.invalid`, `.onion`, `.arpa`): no mail reaches those, and the addresses given
here are all mailed. `EMAIL_PATTERN` states the same of ASCII addresses in the OpenAPI
document (`format: email` alone admits `x@y.test`, which the service refuses), so a client or
a fuzzer can tell from the schema which addresses are taken. Internationalised addresses are
taken too, but are outside `format: email` and so outside the document.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, EmailStr, Field


def _any_case(word: str) -> str:
    """`[Tt][Ee][Ss][Tt]` for `test`: JSON Schema patterns have no case-insensitive flag."""
    return "".join(f"[{c.upper()}{c}]" for c in word)


SPECIAL_USE_DOMAINS = ("arpa", "invalid", "local", "localhost", "onion", "test")
MAX_LOCAL_PART = 64  # RFC 5321's limit, which `format: email` holds to too
MAX_ADDRESS = 254

_ATEXT = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
# A dot-atom of at most 64 characters: no dot first, last or twice in a row (the last said by
# a lookahead over the whole address: the host name has no `..` either).
_LOCAL = f"{_ATEXT}(?:[A-Za-z0-9!#$%&'*+/=?^_`{{|}}~.-]{{0,{MAX_LOCAL_PART - 2}}}{_ATEXT})?"
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_TOP_LEVEL = "(?:[A-Za-z]|[A-Za-z0-9][A-Za-z0-9-]{0,61}[A-Za-z])"
_SPECIAL = "(?:" + "|".join(_any_case(d) for d in SPECIAL_USE_DOMAINS) + ")"
EMAIL_PATTERN = (
    f"^(?!.*\\.\\.){_LOCAL}"
    # After the @: no special-use domain, no `ab--` label (nor any `--`: Punycode is left out
    # of the document too), then the host name.
    f"@(?!(?:.*\\.)?{_SPECIAL}$)(?!.*--)(?:{_LABEL}\\.)+{_TOP_LEVEL}$"
)
EMAIL_DESCRIPTION = (
    "An e-mail address that mail can reach: not of a special-use domain (.test, .local, "
    ".localhost, .invalid, .onion, .arpa), which is refused with 422."
)
EMAIL_SCHEMA: dict[str, Any] = {
    "type": "string",
    "format": "email",
    "maxLength": MAX_ADDRESS,
    "pattern": EMAIL_PATTERN,
}


def _local_part_fits(address: str) -> str:
    """`email_validator`'s `strict` length check, which pydantic's `EmailStr` does not ask for."""
    if len(address.rpartition("@")[0]) > MAX_LOCAL_PART:
        raise ValueError(f"an e-mail address has at most {MAX_LOCAL_PART} characters before the @")
    return address


Email = Annotated[
    EmailStr,
    AfterValidator(_local_part_fits),
    Field(
        description=EMAIL_DESCRIPTION,
        json_schema_extra={"maxLength": MAX_ADDRESS, "pattern": EMAIL_PATTERN},
    ),
]
"""An address a request names, checked by `EmailStr` and documented by `EMAIL_PATTERN`."""
