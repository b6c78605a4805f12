"""Checks the Schemathesis run of `test_schemathesis.py` adds to its own (`--checks all` runs
them too), and the refusals that run excuses.

Schemathesis loads this file by path (the run's `hooks` setting), outside the project's
packages: it imports nothing of the project.

- `problem_details`: every 4xx answer is `application/problem+json` with an `error.code`
  (the MCP endpoint may answer a JSON-RPC error instead, as its protocol asks).
- `refused_for_the_excused_reason`: a schema-valid request an operation of `EXCUSES` refuses
  is refused for the reason its excuse names and no other. Schemathesis's own
  `positive_data_acceptance` is told each excused status (`test_schemathesis.CONFIG`), but a
  status alone would let any other refusal of that status pass too.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

import schemathesis
from schemathesis import Case, CheckContext, Response

PROBLEM_JSON = "application/problem+json"
MCP_PATH = "/mcp"


class Excuse(NamedTuple):  # no dataclass: loaded by path, this module is not in sys.modules
    """Why an operation may refuse a request its schema admits: what no schema can state."""

    status: int
    # Searched for in the answer's body: the error code, or the words of the reason.
    reason: str
    why: str


_TOKEN = Excuse(
    400,
    r'"code":\s*"invalid_token"',
    "a token of the right shape that the service never issued, or that was used",
)
_DNS = r"(does not resolve|resolves to (no address|a non-public address|a cloud metadata))"
EXCUSES: dict[str, Excuse] = {
    "resetPassword": _TOKEN,
    "confirmTrial": _TOKEN,
    "confirmEmail": _TOKEN,
    "confirmNotificationChannel": _TOKEN,
    "receiveStripeWebhook": Excuse(
        400,
        r'"code":\s*"invalid_signature"',
        "a Stripe-Signature of the right shape that does not verify",
    ),
    "createNotificationChannel": Excuse(
        422,
        rf'"code":\s*"destination_refused".*{_DNS}',
        "a webhook URL whose host does not resolve (offline, none does) or resolves to a "
        "private address: a DNS look-up, no schema rule",
    ),
    "importMonitoringExport": Excuse(
        422,
        r'"code":\s*"invalid_export"',
        "a file, or an export of the documented shape, that is no usable export (its rows "
        "disagree with each other): no schema states the contents of a file",
    ),
    "createNotificationRule": Excuse(
        422,
        r"price_min must not be above price_max",
        "a price_min above its price_max: JSON Schema compares no field with another",
    ),
    "replaceNotificationRule": Excuse(
        422,
        r"price_min must not be above price_max",
        "a price_min above its price_max: JSON Schema compares no field with another",
    ),
    "startMonitor": Excuse(
        400,
        r"price_from is above",
        "a catalogue URL whose price_from is above its price_to (one query parameter against "
        "another: no pattern compares numbers); tests/api/test_catalogue_url_schema.py shows "
        "every other URL of the pattern is taken",
    ),
    "createRun": Excuse(
        400,
        r"price_from is above",
        "as startMonitor: a price_from above its price_to",
    ),
}


def _operation_id(case: Case) -> str | None:
    raw: dict[str, Any] = case.operation.definition.raw
    operation_id = raw.get("operationId")
    return operation_id if isinstance(operation_id, str) else None


def _body(response: Response) -> Any:
    try:
        return json.loads(response.content)
    except ValueError:
        return None


def _json_rpc_error(body: Any) -> bool:
    return (
        isinstance(body, dict)
        and body.get("jsonrpc") == "2.0"
        and isinstance(body.get("error"), dict)
        and isinstance(body["error"].get("code"), int)
    )


@schemathesis.check
def problem_details(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """A 4xx answer says what went wrong the one way the document promises."""
    if not 400 <= response.status_code < 500:
        return None
    content_type = (response.headers.get("content-type") or [""])[0].split(";")[0].strip()
    body = _body(response)
    rpc = case.operation.path == MCP_PATH and content_type == "application/json"
    if rpc and _json_rpc_error(body):
        return None
    if content_type != PROBLEM_JSON:
        raise AssertionError(
            f"{response.status_code} answered as {content_type or 'no content type'}, "
            f"not {PROBLEM_JSON}"
        )
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        raise AssertionError(f"{response.status_code} problem without an `error.code`")
    return None


@schemathesis.check
def refused_for_the_excused_reason(
    ctx: CheckContext, response: Response, case: Case
) -> bool | None:
    """A schema-valid request refused by an excused operation: for its excuse's reason."""
    meta = case.meta
    excuse = EXCUSES.get(_operation_id(case) or "")
    if meta is None or excuse is None or response.status_code != excuse.status:
        return None
    if not meta.generation.mode.is_positive:
        return None
    text = response.content.decode(errors="replace")
    if re.search(excuse.reason, text, re.DOTALL) is None:
        raise AssertionError(
            f"A request the schema admits was refused ({response.status_code}) for another "
            f"reason than {excuse.why!r}: {text[:300]}"
        )
    return None
