"""The run repository: a run's analysis and its success are one transaction."""

from __future__ import annotations

import uuid

from store import NewRun, RunRecord, Store
from tests.conftest import new_workspace


async def _running_run(store: Store) -> RunRecord:
    run = await store.runs.create(
        NewRun(
            run_id=f"run_{uuid.uuid4().hex[:12]}",
            workspace_id=await new_workspace(store),
            label=None,
            source="scrape",
            url="https://www.vinted.fr/catalog",
            monitor_id=None,
            max_items=100,
        )
    )
    await store.runs.mark_running(run.id)
    return run


async def test_a_run_succeeds_with_its_analysis_logged_and_linked(store: Store) -> None:
    run = await _running_run(store)
    analysis = await store.runs.succeed_with_analysis(
        run, analysis_id=f"ana_{uuid.uuid4().hex[:12]}", source="scrape", result_json="{}", items=7
    )
    assert analysis is not None and analysis.run_id == run.id
    done = await store.runs.get(run.id, run.workspace_id)
    assert done is not None
    assert (done.state, done.analysis_id, done.items, done.progress) == (
        "succeeded",
        analysis.id,
        7,
        1.0,
    )
    assert [line for _, line in await store.runs.log_tail(run.id, 5)] == [
        f"done: analysis {analysis.id}"
    ]


async def test_a_run_that_ended_meanwhile_keeps_no_analysis(store: Store) -> None:
    run = await _running_run(store)
    assert await store.runs.finish(run.id, "cancelled")
    analysis = await store.runs.succeed_with_analysis(
        run, analysis_id=f"ana_{uuid.uuid4().hex[:12]}", source="scrape", result_json="{}", items=7
    )
    assert analysis is None
    assert await store.runs.analyses(run.workspace_id, 0, 10) == ([], 0)
    ended = await store.runs.get(run.id, run.workspace_id)
    assert ended is not None and (ended.state, ended.analysis_id) == ("cancelled", None)
    assert await store.runs.log_tail(run.id, 5) == []
