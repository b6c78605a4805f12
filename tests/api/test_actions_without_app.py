"""The use cases shared by REST, pages and MCP run without an app: each takes what it uses
(the store, or a `Backend`) as arguments, so a test hands it a real store and nothing else.

No Quart app exists in these tests, and none is looked for: were an action to reach for
`services()`, it would fail here with "working outside of application context".
"""

from __future__ import annotations

import pytest
import trio
from quart import has_app_context

from api.backend import Backend
from api.billing.plans import configured_plans
from api.billing.quotas import PlanRequired
from api.http.errors import BadRequest, NotFound
from api.monitors.actions import (
    counted,
    delete_monitor_in,
    owned_monitor,
    pause_monitor_in,
    require_active_monitor_slot,
    resume_monitor_in,
    start_monitor_in,
)
from api.monitors.schemas import StartMonitorRequest
from api.notifications.actions import alert_summary, create_rule, list_rules
from api.notifications.schemas import RuleIn
from api.runs.actions import owned_run, runs_out
from api.settings import Settings
from engine import open_engine
from store import Entitlement, Store
from tests.conftest import new_monitor, new_workspace
from tests.engine.fake_market import FakeMarket
from tests.engine.test_engine import FAST

URL = "https://www.vinted.fr/catalog?catalog[]=1904&order=newest_first"


async def _on_trial(store: Store) -> str:
    """A new workspace on the trial plan, granted through the store as an operator would."""
    await store.billing.seed_plans(configured_plans(Settings(secret_key="k")))
    workspace_id = await new_workspace(store)
    trial = Entitlement(plan="trial", status="active", source="grant")
    await store.billing.apply(workspace_id, trial, cause="test")
    return workspace_id


async def test_monitor_actions_list_read_and_count_quota_without_an_app(store: Store) -> None:
    assert not has_app_context()
    workspace_id = await _on_trial(store)
    monitor = await new_monitor(store, workspace_id, label="Jeans")

    listed = await counted(store, await store.monitors.in_workspace(workspace_id))
    assert [(m.id, m.label, m.status) for m in listed] == [(monitor.id, "Jeans", "paused")]
    assert listed[0].counts is not None and set(listed[0].counts) >= {"open", "sold"}

    assert await owned_monitor(store, monitor.id, workspace_id) == monitor
    elsewhere = await new_workspace(store)
    with pytest.raises(NotFound):  # another workspace's monitor is one that does not exist
        await owned_monitor(store, monitor.id, elsewhere)

    trial = next(p for p in await store.billing.plans() if p.name == "trial")
    assert await require_active_monitor_slot(store, workspace_id) == trial.active_monitors
    with pytest.raises(PlanRequired):  # a workspace without a plan creates nothing
        await require_active_monitor_slot(store, elsewhere)


async def test_run_actions_list_and_read_without_an_app(store: Store) -> None:
    assert not has_app_context()
    workspace_id = await _on_trial(store)
    assert await runs_out(store, workspace_id, 0, 10) == ([], 0)
    with pytest.raises(NotFound):
        await owned_run(store, "run_missing", workspace_id)


async def test_a_rule_is_created_listed_and_refused_elsewhere_without_an_app(store: Store) -> None:
    assert not has_app_context()
    workspace_id = await new_workspace(store)
    monitor = await new_monitor(store, workspace_id)
    asked = RuleIn(name="New jeans", kinds=["new_listing"], monitor_id=monitor.id)

    rule = await create_rule(store, workspace_id, asked)
    assert [r.id for r in await list_rules(store, workspace_id, monitor.id)] == [rule.id]
    summary = await alert_summary(store, workspace_id, monitor.id)
    assert [r.id for r in summary.applied] == [rule.id] and summary.channels == []

    elsewhere = await new_workspace(store)
    with pytest.raises(NotFound):  # a monitor of another workspace is one that does not exist
        await create_rule(store, elsewhere, asked)
    assert await list_rules(store, elsewhere) == []


async def test_a_monitor_is_started_paused_resumed_and_deleted_without_an_app(
    store: Store,
) -> None:
    """The actions that drive the engine take a `Backend`: a real store and an engine of
    `open_engine`, polling a fake market, and still no app."""
    assert not has_app_context()
    workspace_id = await _on_trial(store)
    settings = Settings(secret_key="k", min_poll_seconds=30)
    async with open_engine(store, FakeMarket(), FAST) as engine:
        backend = Backend(store, engine, settings)
        trial = next(p for p in await store.billing.plans() if p.name == "trial")
        every = max(30, trial.min_poll_seconds)  # the plan's floor and the service's
        request = StartMonitorRequest(url=URL, label="Jeans", interval_seconds=every)
        monitor = await start_monitor_in(backend, workspace_id, request)
        assert (monitor.label, monitor.url, monitor.interval_seconds) == ("Jeans", URL, every)
        with trio.fail_after(30):  # its bootstrap poll, in the background, makes it active
            while (await owned_monitor(store, monitor.id, workspace_id)).status != "active":
                await trio.sleep(0.05)
        await pause_monitor_in(backend, monitor)
        assert (await owned_monitor(store, monitor.id, workspace_id)).status == "paused"
        await resume_monitor_in(backend, await owned_monitor(store, monitor.id, workspace_id))
        assert (await owned_monitor(store, monitor.id, workspace_id)).status == "active"
        with pytest.raises(BadRequest):  # under the service's floor: nothing is created
            await start_monitor_in(
                backend, workspace_id, StartMonitorRequest(url=URL, interval_seconds=10)
            )
        await delete_monitor_in(backend, monitor)
        with pytest.raises(NotFound):
            await owned_monitor(store, monitor.id, workspace_id)
        assert not engine.is_running(monitor.id)
