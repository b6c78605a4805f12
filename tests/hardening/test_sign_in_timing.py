"""Sign-in takes as long for an unknown e-mail as for a wrong password (#21, item 1).

Before: an existing e-mail cost a median 262 ms (one argon2 verification), an unknown one
11.5 ms (none), with the same status and body, so timing told who has an account. The
distributions are compared by their medians over interleaved attempts; the bound is loose
(within a factor of two either way) because both paths now do the same argon2 work, while
the difference it guards against was twentyfold.
"""

from __future__ import annotations

import dataclasses
import statistics
import time

import trio

from api.settings import Settings
from tests.conftest import start_service

ATTEMPTS = 9


async def test_an_unknown_email_costs_what_a_wrong_password_costs(
    settings: Settings, nursery: trio.Nursery
) -> None:
    roomy = dataclasses.replace(
        settings, login_attempts_per_ip=1000, login_failures_per_account=1000
    )
    service, stop = await start_service(nursery, roomy)
    async with service.client() as client:
        email = "timing@example.com"
        answer = await client.post(
            "/api/auth/register", json={"email": email, "password": "correct horse battery"}
        )
        assert answer.status_code == 201, answer.text
        samples: dict[str, list[float]] = {"known": [], "unknown": []}
        for i in range(ATTEMPTS):
            for kind, who in (("known", email), ("unknown", f"nobody{i}@example.com")):
                started = time.perf_counter()
                refused = await client.post(
                    "/api/auth/login", json={"email": who, "password": "wrong password!!"}
                )
                samples[kind].append(time.perf_counter() - started)
                assert refused.status_code == 401, refused.text
    stop.set()
    known, unknown = (statistics.median(samples[k]) for k in ("known", "unknown"))
    assert 0.5 <= unknown / known <= 2.0, (known, unknown)
