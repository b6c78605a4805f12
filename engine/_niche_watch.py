"""Niche-level alerts (a sell-through jump, a newly hot niche) for monitors whose rules want them.

A poll sees listings one by one; whether a niche sells faster than before is a question
about the whole history, which the niche analysis answers (`engine.analysis.alerts`: a
two-proportion test between the halves of the window, a Wilson bound against the market).
So after a successful poll, at most once per `every` for each monitor, the monitor's
history is analysed in a worker thread and the niche alerts it finds (`niche_findings`) are
handed to the outbox (`store.notify.add_niche_alerts`) with the rules that decide which rule
each goes to (`decide_niche_alerts`, in the outbox's transaction); the outbox keeps one per
(rule, niche, kind) whatever how often the same finding comes back.

It runs in the monitor's actor, after the poll's transaction: a failure here is logged and
never fails the poll; cancellation propagates (the analysis thread is abandoned).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import trio

from store import MonitorRecord, NicheAlert, Store

from .notifications import decide_niche_alerts, niche_findings
from .runs import Evidence, analyse_evidence, monitor_evidence

log = logging.getLogger(__name__)

NICHE_KINDS = NicheAlert.KINDS


class NicheWatch:
    """Shared by every monitor actor of a node; remembers when each monitor was last analysed.

    `limiter` bounds how many analyses run at once (each holds a monitor's history in
    memory and a core busy)."""

    def __init__(
        self,
        store: Store,
        *,
        every: timedelta = timedelta(hours=6),
        analyse: Callable[[Evidence], dict[str, Any]] = analyse_evidence,
        concurrency: int = 1,
    ) -> None:
        self._store = store
        self._every = every
        self._analyse = analyse
        self._limiter = trio.CapacityLimiter(concurrency)
        self._last: dict[str, datetime] = {}

    async def after_poll(self, monitor: MonitorRecord) -> int:
        """Analyse `monitor` if it is due and its rules want niche alerts; the number of
        alerts handed to the outbox (0 when not due). Never raises but for cancellation."""
        now = self._store.clock()
        last = self._last.get(monitor.id)
        if last is not None and now - last < self._every:
            return 0
        self._last[monitor.id] = now
        try:
            rules = await self._store.notify.effective_rules(monitor.workspace_id, monitor.id)
            if not any(NICHE_KINDS.intersection(rule.kinds) for rule in rules):
                return 0
            async with self._limiter:
                evidence = await monitor_evidence(self._store, monitor.id)
                document = await trio.to_thread.run_sync(
                    self._analyse, evidence, abandon_on_cancel=True
                )
            findings = niche_findings(document.get("alerts", []))
            if not findings:
                return 0
            return await self._store.notify.add_niche_alerts(
                monitor.workspace_id, monitor.id, findings, decide=decide_niche_alerts
            )
        except Exception as err:
            log.warning("niche alerts of monitor %s not computed: %r", monitor.id, err)
            return 0
