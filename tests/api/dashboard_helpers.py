"""Analyses with a chosen depth of evidence, written through the store as the engine writes
them, for the dashboard's tests (REST and pages)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx

from engine.analysis import AnalysisInput, analyse, graph_specs
from store import NewRun, Store
from tests.analysis.factory import NOW, History
from tests.conftest import new_monitor


def niche_document() -> str:
    """A real analysis document: Zara sells all it keeps (7 sold, 2 deleted), Nike half."""
    h = History()
    for i in range(7):
        h.listing(brand="Zara", seen_days_ago=20 - i, sold_days_ago=10 - i)
    for i in range(2):
        h.listing(brand="Zara", seen_days_ago=20 - i, deleted_days_ago=5)
    for i in range(5):
        h.listing(brand="Nike", seen_days_ago=25 - i, sold_days_ago=12 - i)
        h.listing(brand="Nike", seen_days_ago=25 - i)
    result = analyse(AnalysisInput.from_records(h.listings, h.events, now=NOW))
    document: dict[str, Any] = result.to_json()
    document["graphs"] = graph_specs(result)
    return json.dumps(document)


async def monitor_analysis(
    store: Store,
    workspace_id: str,
    *,
    days: float,
    sales: int,
    label: str | None = None,
    url: str = "https://www.vinted.fr/catalog?catalog[]=1904",
) -> tuple[str, str]:
    """A monitor (named `label`) and its run's analysis resting on `days` and `sales`;
    returns (analysis id, run id)."""
    monitor = await new_monitor(store, workspace_id, url=url, label=label)
    run = await store.runs.create(
        NewRun(
            run_id=f"run_{uuid.uuid4().hex}",
            workspace_id=workspace_id,
            label=None,
            source="monitor",
            url=None,
            monitor_id=monitor.id,
            max_items=0,
        )
    )
    analysis = await store.runs.succeed_with_analysis(
        run,
        analysis_id=f"an_{uuid.uuid4().hex}",
        source="monitor",
        result_json=niche_document(),
        items=25,
        window_days=days,
        sales=sales,
    )
    assert analysis is not None
    return analysis.id, run.id


async def workspace_of(client: httpx.AsyncClient) -> str:
    me = await client.get("/api/auth/me")
    assert me.status_code == 200, me.text
    workspace: str = me.json()["workspace"]["id"]
    return workspace
