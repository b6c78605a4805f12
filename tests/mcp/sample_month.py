"""A populated workspace for the answer-size tests: the demo's sample month (a monitor, its
run and its analysis of 200 niches, what `make run` shows a newcomer) plus more monitors, runs
and analyses than a list tool answers by default. Recorded once per test run into a SQLite
file that each test copies (recording and analysing it takes about 20 s): under pytest-xdist
the workers share one file, the first to need it recording it under a lock."""

from __future__ import annotations

import fcntl
import uuid
from pathlib import Path

import trio
import trio_asyncio

from api.http.security import hash_password, new_id
from api.process.demo_sample import record_sample
from api.process.node import open_node
from api.settings import Settings
from store import NewAnalysis, NewRun, NewUser, Store, open_store
from tests.api.helpers import PASSWORD
from tests.conftest import new_monitor

EMAIL = "sample-month@example.com"
EXTRA = 24  # monitors, runs and imported analyses besides the sample's: over a default page
CATALOGUE = "https://www.vinted.fr/catalog?catalog[]=1904&search_text=jeans"


async def _sample(database_url: str, folder: Path) -> tuple[str, str]:
    """The sample month recorded and analysed in a new account's workspace: (workspace id,
    the analysis' document)."""
    settings = Settings(database_url=database_url, outbox_dir=folder / "outbox")
    async with open_node(settings, role="serve") as (store, engine):
        user = await store.create_user(
            NewUser(
                email=EMAIL,
                name="Sample",
                password_hash=await hash_password(PASSWORD),
                email_verified_at=store.clock(),
            )
        )
        workspace_id = user.workspace_id
        sample = await record_sample(store, engine, workspace_id, "http://127.0.0.1:9")
        with trio.fail_after(300):
            while (run := await store.runs.get(sample.run_id, None)) is not None and run.state in (
                "queued",
                "running",
            ):
                await trio.sleep(0.2)
        assert run is not None and run.state == "succeeded" and run.analysis_id, run
        document = await store.runs.analysis_result(run.analysis_id, workspace_id)
    assert document is not None
    return workspace_id, document


async def _more(store: Store, workspace_id: str, document: str) -> None:
    """`EXTRA` paused monitors, cancelled runs and imports of the sample's analysis."""
    for i in range(EXTRA):
        url = f"{CATALOGUE}+{i}"
        await new_monitor(store, workspace_id, url=url, label=f"Jeans {i}")
        run = await store.runs.create(
            NewRun(new_id("run"), workspace_id, f"Jeans {i}", "url", url, None, 100)
        )
        await store.runs.finish(run.id, "cancelled")
        await store.runs.add_analysis(
            NewAnalysis(
                analysis_id=new_id("an"),
                workspace_id=workspace_id,
                run_id=None,
                source="import",
                source_url=url,
                result_json=document,
                source_label=f"Imported jeans {i}",
            )
        )


def record(template: Path, path: Path) -> None:
    """Copy the migrated `template` to `path` and populate it (blocking: a session fixture's)."""
    path.write_bytes(template.read_bytes())
    database_url = f"sqlite+aiosqlite:///{path}"

    async def work() -> None:
        workspace_id, document = await _sample(database_url, path.parent)
        async with trio_asyncio.open_loop(), open_store(database_url) as store:
            await _more(store, workspace_id, document)

    trio.run(work)


def shared(template: Path, folder: Path) -> Path:
    """The populated database in `folder` (shared by the run's workers), recorded from the
    migrated `template` by the first caller while the others wait on its lock."""
    path = folder / "sample-month.db"
    with (folder / "sample-month.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            partial = folder / f"sample-month-{uuid.uuid4().hex[:8]}.db"
            record(template, partial)
            partial.rename(path)
    return path


def copy_of(template: Path, folder: Path) -> str:
    """A database URL of a fresh copy of the populated `template` in `folder`."""
    path = folder / f"sample-{uuid.uuid4().hex[:8]}.db"
    path.write_bytes(template.read_bytes())
    return f"sqlite+aiosqlite:///{path}"
