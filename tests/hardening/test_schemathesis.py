"""Property-based testing of the whole REST API with Schemathesis, against the live
`/openapi.json` of a running service (PostgreSQL behind it, the marketplace simulator behind
that), as two users of different workspaces so that its object-level-authorization check runs.

Every phase (examples, coverage, fuzzing, stateful) and every check (`-c all`, with the two
of schemathesis_checks.py), with a fixed seed. The run passes only with zero failures: no 5xx,
no response outside its documented schema, status or content type, no accepted invalid input,
no schema-valid input refused but for a reason no schema can state, no 4xx that is not a
problem+json with an `error.code`, no object of one workspace served to the other.
docs/reliability.md says how to run a longer one locally.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import httpx
import pytest
import trio

from api.settings import Settings
from scrapers.simulator import SimulatorConfig, serve_simulator
from tests.api.helpers import create_token, signed_in, wait_finished_run
from tests.billing.conftest import billing_settings
from tests.billing.conftest import fake_stripe as fake_stripe  # a fixture, used by name
from tests.billing.fake_stripe import FakeStripe
from tests.conftest import start_service
from tests.hardening import schemathesis_checks
from tests.hardening.schemathesis_checks import EXCUSES

SEED = 20261123
# Enough cases per operation that the whole run generates well over 5,000 (asserted below):
# 40 gave 9,104 in 99 s alone on a quiet machine (85 gave about 13,000 in twice the time);
# `make fuzz` asks for 400.
EXAMPLES_PER_OPERATION = int(os.environ.get("NICHESCOPE_FUZZ_EXAMPLES", "40"))
MIN_CASES = 5_000
TOOL_BUG = "AST constructor recursion depth mismatch"
# Extra Schemathesis options for local runs, e.g. a longer one (docs/reliability.md):
# NICHESCOPE_FUZZ_EXAMPLES=400 NICHESCOPE_FUZZ_ARGS="--max-time 1800" make fuzz
EXTRA_ARGS = os.environ.get("NICHESCOPE_FUZZ_ARGS", "").split()
STATEFUL_STEPS = 10
STATEFUL_EXAMPLES = int(os.environ.get("NICHESCOPE_FUZZ_STATEFUL_EXAMPLES", "120"))


@pytest.fixture
def database_url(postgres_url: str) -> str:
    """PostgreSQL only: the production database; SQLite answers the same API (covered by the
    rest of the suite) and a second run would double the time for little."""
    return postgres_url


def _wfc_auth(tokens: dict[str, str]) -> dict[str, object]:
    """A Web Fuzzing Commons auth document: one entry per user, each with its own bearer."""
    return {
        "schemaVersion": "0.1.0",
        "auth": [
            {"name": name, "fixedHeaders": [{"name": "Authorization", "value": f"Bearer {t}"}]}
            for name, t in tokens.items()
        ],
    }


# Which answers count as "refused for a good reason" when the request matched the schema.
# The document states every rule it can (api/http/openapi_rules.py: URL patterns, token and header
# shapes, the plans on sale; the request models: e-mail addresses that mail can reach, each
# channel kind's destination, rule channel ids), so a schema-valid request refused is a failure,
# except on the operations of `schemathesis_checks.EXCUSES`, each for the one reason no schema
# can state (said there, and checked by its `refused_for_the_excused_reason`). 409/410 are state
# (a run already finished, a trial link already used) and allowed everywhere.
ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "410", "429"]
CONFIG = """
hooks = "{hooks}"

[auth.wfc]
path = "{auth}"
peers = ["alice", "bob"]

# The stateful phase follows the document's links (api/http/openapi_links.py) from the seeded
# monitor and run: longer scenarios, and more of them, than the defaults (6 steps), so that
# chains like monitor -> run of it -> its analysis -> its graphs are walked.
[phases.stateful]
max-steps = {stateful_steps}
generation.max-examples = {stateful_examples}

[checks.positive_data_acceptance]
expected-statuses = {accepted}
"""


def _excused_operations() -> str:
    """One `[[operations]]` table per excused operation: its excused status accepted too."""
    tables = []
    for operation_id, excuse in sorted(EXCUSES.items()):
        statuses = json.dumps([*ACCEPTED, str(excuse.status)])
        tables.append(
            f"# {excuse.why}\n[[operations]]\ninclude-operation-id = {json.dumps(operation_id)}\n"
            f"checks.positive_data_acceptance.expected-statuses = {statuses}\n"
        )
    return "\n".join(tables)


def _config(auth: Path) -> str:
    head = CONFIG.format(
        hooks=Path(schemathesis_checks.__file__).resolve(),
        auth=auth,
        stateful_steps=STATEFUL_STEPS,
        stateful_examples=STATEFUL_EXAMPLES,
        accepted=json.dumps(ACCEPTED),
    )
    return head + "\n" + _excused_operations()


@pytest.mark.soak
async def test_schemathesis_finds_nothing(
    settings: Settings, nursery: trio.Nursery, tmp_path: Path, fake_stripe: FakeStripe
) -> None:
    origin: str = await nursery.start(serve_simulator, SimulatorConfig(seed=4, n_listings=300))
    settings = billing_settings(settings, fake_stripe, smtp_port=None).model_copy(
        update={
            # Generous (fuzzing creates many monitors and runs), with production's poll floor.
            "plan_quotas": {"trial": {**settings.plan_quotas["trial"], "min_poll_seconds": 60}},
            "market_origins": (origin,),
            # Only the simulator is a site here: the document's URL pattern then names it
            # alone, and generated URLs never name a marketplace host this offline machine
            # cannot resolve.
            "market_sites": (),
            "market_rate": 0,
            # Monitors the fuzzer starts poll at most once a minute, as in production: at one
            # second, dozens of them saturate this one test process and starve the requests.
            "min_poll_seconds": 60,
        }
    )
    service, _ = await start_service(nursery, settings)
    tokens: dict[str, str] = {}
    for name in ("alice", "bob"):
        async with service.client() as client:
            await signed_in(client)
            tokens[name] = await create_token(client, ["read", "write"], label=name)
            await _seed(client, origin)
    auth = tmp_path / "auth.json"
    auth.write_text(json.dumps(_wfc_auth(tokens)))
    (tmp_path / "schemathesis.toml").write_text(_config(auth))
    report = tmp_path / "report.json"
    command = [
        sys.executable, "-m", "schemathesis.cli", "run", f"{service.url}/openapi.json",
        "--checks", "all",
        "--phases", "examples,coverage,fuzzing,stateful",
        "--max-examples", str(EXAMPLES_PER_OPERATION),
        "--seed", str(SEED),
        "--workers", "2",  # the service waits on its database half the time: overlap that
        # No retry: the request that, a few times per run, went unanswered after a TRACE or
        # QUERY with a body on the same connection was the keep-alive stall of #21 item 4
        # (api/http/keep_alive.py), now fixed; a network-level failure is a failure again.
        "--request-timeout", "10",
        "--report", "json", "--report-json-path", str(report),
        "--suppress-health-check", "too_slow,filter_too_much",
        *EXTRA_ARGS,
    ]  # fmt: skip
    done = await trio.run_process(
        command, cwd=tmp_path, capture_stdout=True, capture_stderr=True, check=False
    )
    output = done.stdout.decode(errors="replace")
    print(output[-30_000:])
    # Judged on the JSON report rather than the exit status: Schemathesis (on this CPython)
    # now and then trips over its own `SystemError: AST constructor recursion depth
    # mismatch` while building a coverage case; that is the tool failing, not the API.
    assert report.exists(), output[-8_000:] + done.stderr.decode(errors="replace")[-3_000:]
    result = json.loads(report.read_text())
    assert result["failures"] == [], output[-8_000:]
    # The report names errors by title only; the tool's own bug shows in its output.
    errors = sum(int(e.get("count", 1)) for e in result["errors"])
    runtime = sum(int(e.get("count", 1)) for e in result["errors"] if e["title"] == "Runtime Error")
    assert errors == 0 or (errors == runtime and TOOL_BUG in output), output[-8_000:]
    cases = _generated_cases(result)
    assert cases >= MIN_CASES, f"only {cases} cases generated"


async def _seed(client: httpx.AsyncClient, origin: str) -> None:
    """One monitor and one finished run (with its analysis) in the user's workspace.

    The list operations then name real ids, which the stateful phase follows along the
    document's links (monitor -> its runs -> their analyses -> a monitor of the analysis ...):
    a generated catalogue URL is refused (the allowlist is no rule a schema states), so the
    fuzzer could never create the first monitor or run itself.
    """
    url = f"{origin}/catalog?order=newest_first"
    started = await client.post("/api/monitoring/start", json={"url": url, "label": "seed"})
    assert started.status_code == 202, started.text
    created = await client.post("/api/runs", json={"url": url, "max_items": 100})
    assert created.status_code == 201, created.text
    run = await wait_finished_run(client, created.json()["id"])
    assert run["state"] == "succeeded", run


def _generated_cases(report: dict[str, object]) -> int:
    """Test cases Schemathesis generated, from its JSON report."""
    return int(report["test_cases"]["generated"])  # type: ignore[index]
