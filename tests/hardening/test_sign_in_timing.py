"""Sign-in takes as long for an unknown e-mail as for a wrong password (#21, item 1).

Before: an existing e-mail cost a median 262 ms (one argon2 verification), an unknown one
11.5 ms (none), with the same status and body, so timing told who has an account. The
distributions are compared by their medians over interleaved attempts; the bound is loose
(within a factor of two either way) because both paths now do the same argon2 work, while
the difference it guards against was twentyfold.
"""

from __future__ import annotations

import shutil
import statistics
import time
from pathlib import Path

import pytest
import trio

from api.settings import Settings
from tests.conftest import start_service


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    """Timing of the HTTP paths, not of a database: SQLite only (PostgreSQL doubled the cost)."""
    shutil.copy(sqlite_template, tmp_path / "timing.db")
    return f"sqlite+aiosqlite:///{tmp_path / 'timing.db'}"


ATTEMPTS = 9


async def test_an_unknown_email_costs_what_a_wrong_password_costs(
    settings: Settings, nursery: trio.Nursery
) -> None:
    roomy = settings.model_copy(
        update={"login_attempts_per_ip": 1000, "login_failures_per_account": 1000}
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


async def test_forgot_password_and_registration_cost_the_same_either_way(
    settings: Settings, nursery: trio.Nursery
) -> None:
    """Forgot-password made and mailed a link for an existing account inside the request (19
    ms against 11 for an unknown e-mail); registering a taken e-mail mailed its owner. Both
    now happen after the answer, so the answers cost the same. Each attempt comes from its
    own address (the per-address limits are not what is measured here), and the next one
    waits for the previous one's mail, so that background work never lands in a measurement.
    """
    behind_proxy = settings.model_copy(
        update={"trusted_proxies": ("127.0.0.1",), "login_attempts_per_ip": 1000}
    )
    service, stop = await start_service(nursery, behind_proxy)
    n = 21
    kinds = ("reset known", "reset unknown", "register taken", "register free")
    samples: dict[str, list[float]] = {kind: [] for kind in kinds}
    async with service.client() as client:
        known = [f"known{i}@example.com" for i in range(n)]
        for i, email in enumerate(known):
            body = {"email": email, "password": "correct horse battery"}
            headers = {"X-Forwarded-For": f"198.51.100.{i}"}
            assert (await client.post("/api/auth/register", json=body, headers=headers)).is_success
        # Each new account's confirmation link leaves after its answer: all gone before timing.
        await service.mails("Confirm your e-mail address", count=n)

        async def timed(kind: str, path: str, body: dict[str, str], address: str) -> None:
            started = time.perf_counter()
            answer = await client.post(path, json=body, headers={"X-Forwarded-For": address})
            samples[kind].append(time.perf_counter() - started)
            assert answer.is_success, answer.text

        for i in range(n):
            await timed("reset known", "/api/auth/forgot-password", {"email": known[i]},
                        f"203.0.113.{i}")  # fmt: skip
            await service.mails("Reset your Nichescope password", known[i])
            await timed("reset unknown", "/api/auth/forgot-password",
                        {"email": f"nobody{i}@example.com"}, f"203.0.114.{i}")  # fmt: skip
            password = "correct horse battery"
            await timed("register taken", "/api/auth/register",
                        {"email": known[i], "password": password}, f"192.0.2.{i}")  # fmt: skip
            await service.mails("Someone tried to register", known[i])
            await timed("register free", "/api/auth/register",
                        {"email": f"fresh{i}@example.com", "password": password},
                        f"192.0.3.{i}")  # fmt: skip
            await service.mails("Confirm your e-mail address", f"fresh{i}@example.com")
    stop.set()
    median = {kind: statistics.median(values) for kind, values in samples.items()}
    reset = median["reset unknown"] / median["reset known"]
    register = median["register free"] / median["register taken"]
    print({kind: f"{seconds * 1000:.1f} ms" for kind, seconds in median.items()})
    # Within 1.5x either way: a CI machine busy with other work read 6.4 against 4.7 ms for
    # the reset (0.74); the leak it guards against was 10.1 against 5.2 ms (0.51).
    assert 0.67 <= reset <= 1.5, median
    assert 0.67 <= register <= 1.5, median
