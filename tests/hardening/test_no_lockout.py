"""Failed sign-ins slow guessing down without locking the owner out (#21, item 11).

Before: five wrong passwords from anyone locked the account for 15 minutes, its owner
included, which made the lockout a denial-of-service lever. Now (`identity.check_password`):
an address that fails on an account is stopped for that account; past the free failures, a
browser new to the account waits a bounded, growing delay; the owner's own browser (it signed
in before: device cookie) and other accounts are not slowed at all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import trio

from tests.api.helpers import PASSWORD, assert_envelope, register
from tests.conftest import RunningService, Settings, start_service, unique_email


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    """The limits live in memory, not in a database: SQLite only."""
    shutil.copy(sqlite_template, tmp_path / "timing.db")
    return f"sqlite+aiosqlite:///{tmp_path / 'timing.db'}"


def _from(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": address}


async def test_many_addresses_guessing_cannot_lock_the_owner_out(
    settings: Settings, nursery: trio.Nursery
) -> None:
    behind_proxy = settings.model_copy(
        update={"trusted_proxies": ("127.0.0.1",), "login_failures_per_account": 5}
    )
    service: RunningService
    service, stop = await start_service(nursery, behind_proxy)
    email = unique_email("owner")
    right = {"email": email, "password": PASSWORD}
    wrong = {"email": email, "password": "not the password"}
    async with service.client() as owner, service.client() as attacker:
        await register(owner, email)
        home = await owner.post("/api/auth/login", json=right, headers=_from("198.51.100.7"))
        assert home.status_code == 200 and "ns_device" in owner.cookies

        # Five failures from one address: that address may not try this account any more...
        for _ in range(5):
            answer = await attacker.post(
                "/api/auth/login", json=wrong, headers=_from("203.0.113.1")
            )
            assert answer.status_code == 401
        stopped = await attacker.post("/api/auth/login", json=right, headers=_from("203.0.113.1"))
        assert_envelope(stopped, 429, "rate_limited")

        # ... so the guessing moves to other addresses, each failing until it is slowed.
        delays = []
        for n in range(2, 9):
            answer = await attacker.post(
                "/api/auth/login", json=wrong, headers=_from(f"203.0.113.{n}")
            )
            if answer.status_code == 429:
                delays.append(int(answer.headers["Retry-After"]))
        assert delays and max(delays) <= 60, delays  # slowed, in seconds, not locked for minutes

        # The owner's browser signs in at once, from home or elsewhere.
        for address in ("198.51.100.7", "192.0.2.50"):
            again = await owner.post("/api/auth/login", json=right, headers=_from(address))
            assert again.status_code == 200, again.text
        # Another account is untouched.
        other = unique_email("bystander")
        await register(attacker, other)
        fine = await attacker.post(
            "/api/auth/login",
            json={"email": other, "password": PASSWORD},
            headers=_from("203.0.113.9"),
        )
        assert fine.status_code == 200
    stop.set()
