"""`nichescope market session set` as an operator runs it: a checked session stored sealed,
which a node then uses; a bad one refused with its reason and nothing stored."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import trio_asyncio

from engine import StoreSessionVault
from store import open_store
from tests.scrapers.test_sessions import jwt

ROOT = Path(__file__).resolve().parents[2]
SECRET = "a secret key for this test only"


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NICHESCOPE_")}
    env.update(
        NICHESCOPE_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}",
        NICHESCOPE_SECRET_KEY=SECRET,
        NICHESCOPE_MARKET_ORIGINS="http://127.0.0.1:8100",
    )
    return subprocess.run(
        [sys.executable, "-m", "api.process.cli", "market", "session", "set", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


async def test_a_pasted_session_is_stored_sealed_for_every_node(tmp_path: Path) -> None:
    token = jwt(iss="vinted-iam-oauth", exp=int(time.time()) + 3600)
    done = run(tmp_path, "127.0.0.1:8100", "--cookie", f"access_token_web={token}; anon_id=a1")
    assert done.returncode == 0, done.stderr
    assert "http://127.0.0.1:8100: operator session until" in done.stdout
    assert token not in done.stdout + done.stderr
    with sqlite3.connect(tmp_path / "cli.db") as db:
        [(site, source, sealed)] = db.execute("SELECT site, source, sealed FROM market_sessions")
    assert (site, source) == ("http://127.0.0.1:8100", "operator") and token not in sealed
    async with (
        trio_asyncio.open_loop(),
        open_store(f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}") as store,
    ):
        session = await StoreSessionVault(store, SECRET).load("http://127.0.0.1:8100")
        assert session is not None and session.token == token and session.anon_id == "a1"
        # Sealed under the secret key: another key opens nothing.
        assert await StoreSessionVault(store, "another key").load(site) is None


def test_a_bad_session_is_refused_with_its_reason(tmp_path: Path) -> None:
    done = run(tmp_path, "www.vinted.fr", "--cookie", "access_token_web=opaque")
    assert done.returncode == 1
    assert "session refused: access_token_web is not a JWT" in done.stderr
