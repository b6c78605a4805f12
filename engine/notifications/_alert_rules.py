"""The alerts that are not a listing's, decided: a monitor gone to `error`, and what the niche
analysis found (a sell-through jump, a newly hot niche). A poll's listing alerts (new, deal,
price drop) are decided against the price book, in `engine.pricing.decide_alerts`.

Pure, like the listing state machine: each function is handed to the store's transaction
that finds the alert (`decide=` of `store.monitors.record_poll_error` and of
`store.notify.add_niche_alerts`), reads only what the store gives it (`ErrorAlerts`,
`NicheAlerts`: the monitor's effective rules and what happened) and returns the alerts to
queue, worded (`AlertDraft`); the store inserts them and decides nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from store import (
    FAILURE_EXPLAINED,
    AlertDraft,
    ErrorAlerts,
    MonitorErrorAlert,
    NicheAlert,
    NicheAlertKind,
    NicheAlerts,
    NicheFinding,
    confidence_admits,
    niche_matches,
)


def decide_error_alerts(failed: ErrorAlerts) -> list[AlertDraft]:
    """One `monitor_error` per rule wanting it, for the poll that put the monitor in
    `error`: the failure explained as the monitor's page explains it (`FAILURE_EXPLAINED`,
    by its kind), else by how many polls failed in a row."""
    explanation = FAILURE_EXPLAINED.get(failed.last_error_kind or "") or (
        f"Polls failed {failed.consecutive_errors} times in a row."
    )
    body = MonitorErrorAlert(
        reason=f"the monitor stopped: {explanation}",
        status=failed.status,
        last_error=failed.last_error,
        explanation=explanation,
    )
    return [
        AlertDraft(rule.id, "monitor_error", failed.subject, body)
        for rule in failed.rules
        if "monitor_error" in rule.kinds
    ]


def decide_niche_alerts(found: NicheAlerts) -> list[AlertDraft]:
    """Rule by rule, each finding of a kind the rule wants, whose niche the rule's brand,
    size and condition filters pass (a niche has no title, price or seller: those filters
    do not apply) and whose sales reach the rule's `min_confidence`. The words are the
    analysis' own."""
    drafts: list[AlertDraft] = []
    for rule in found.rules:
        filters = rule.filters
        for finding in found.findings:
            if finding.kind not in rule.kinds:
                continue
            key = {"brand": finding.brand, "size": finding.size, "condition": finding.condition}
            if not niche_matches(key, filters):
                continue
            if not confidence_admits(filters.min_confidence, finding.sold):
                continue
            body = NicheAlert(niche=finding.niche, reason=finding.reason, figures=finding.figures)
            drafts.append(AlertDraft(rule.id, finding.kind, finding.subject, body))
    return drafts


def niche_findings(alerts: Iterable[Mapping[str, Any]]) -> tuple[NicheFinding, ...]:
    """An analysis' niche alerts (`Alert.to_json()`, as its document holds them) as findings,
    in order; other kinds are left out (the analysis' deals: a listing's deal is judged by
    each poll against the price book). A niche's keys are read at the top level, else inside
    `niche`; its sales are `niche.sold`, else `figures.sold_recent`, else none."""
    findings: list[NicheFinding] = []
    for alert in alerts:
        kind = alert.get("kind")
        if kind not in NicheAlert.KINDS:
            continue
        niche = dict(alert.get("niche") or {})
        figures = dict(alert.get("figures") or {})
        key = {name: alert.get(name, niche.get(name)) for name in _KEYS}
        category = key["category_id"]
        findings.append(
            NicheFinding(
                kind=cast(NicheAlertKind, kind),
                category_id=None if category is None else int(category),
                brand=_text(key["brand"]),
                size=_text(key["size"]),
                condition=_text(key["condition"]),
                sold=int(niche.get("sold", figures.get("sold_recent", 0)) or 0),
                niche=niche,
                reason=str(alert.get("reason") or ""),
                figures=figures,
            )
        )
    return tuple(findings)


_KEYS = ("category_id", "brand", "size", "condition")


def _text(value: object) -> str | None:
    return None if value is None else str(value)
