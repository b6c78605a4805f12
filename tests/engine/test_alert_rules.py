"""The engine's alert rules for what is not a listing (a monitor gone to `error`, the niche
analysis' findings), run as the pure functions they are: no database, no clock. What the
outbox makes of their drafts is tested with the store (tests/store/test_notify_outbox.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from api.notifications.schemas import MonitorRule
from engine import decide_error_alerts, decide_niche_alerts, niche_findings
from engine.pricing import DEAL_RATIO
from store import (
    FAILURE_EXPLAINED,
    AlertDraft,
    ErrorAlerts,
    ListingAlert,
    MonitorErrorAlert,
    NewRule,
    NicheAlert,
    NicheAlerts,
    NotifyKind,
    RuleFilters,
    RuleRecord,
)

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def _rule(rule_id: str, *kinds: NotifyKind, **filters: Any) -> RuleRecord:
    return RuleRecord(
        id=rule_id, workspace_id="wsp_1", monitor_id=None, name=rule_id, kinds=kinds,
        filters=RuleFilters(**filters), deal_ratio=0.7, channel_ids=(), mode="instant",
        digest_hour=8, quiet_start=None, quiet_end=None, timezone="UTC", enabled=True,
        created_at=NOW, updated_at=NOW,
    )  # fmt: skip


def _failed(kind: str | None, *rules: RuleRecord) -> ErrorAlerts:
    return ErrorAlerts(
        poll_id="p2",
        status="error",
        last_error="HTTP 503",
        last_error_kind=kind,
        consecutive_errors=3,
        rules=rules,
    )


def test_a_monitor_error_goes_to_each_rule_that_wants_it_in_the_monitor_pages_words() -> None:
    rules = (_rule("r1", "monitor_error"), _rule("r2", "new_listing"), _rule("r3", "monitor_error"))
    drafts = decide_error_alerts(_failed("unavailable", *rules))
    assert [(d.rule_id, d.kind, d.subject) for d in drafts] == [
        ("r1", "monitor_error", "error:p2"),
        ("r3", "monitor_error", "error:p2"),
    ]
    body = drafts[0].body
    assert isinstance(body, MonitorErrorAlert)
    assert body.explanation == FAILURE_EXPLAINED["unavailable"]
    assert body.reason == f"the monitor stopped: {FAILURE_EXPLAINED['unavailable']}"
    assert body.to_json() == {"reason": body.reason}
    assert body.monitor_state() == {
        "status": "error",
        "last_error": "HTTP 503",
        "explanation": FAILURE_EXPLAINED["unavailable"],
    }


def test_an_unclassified_failure_is_explained_by_its_count() -> None:
    [draft] = decide_error_alerts(_failed(None, _rule("r1", "monitor_error")))
    assert draft.body.reason == "the monitor stopped: Polls failed 3 times in a row."
    assert decide_error_alerts(_failed(None, _rule("r1", "deal"))) == []


def _analysed(brand: str, sold: int, kind: str = "new_hot_niche") -> dict[str, Any]:
    """A niche alert as the analysis' document holds it (`Alert.to_json()`)."""
    return {
        "kind": kind,
        "niche": {"level": "exact", "category_id": 5, "brand": brand, "size": "W32",
                  "condition": "Very good", "label": f"Men › Jeans · {brand}", "sold": sold},
        "item_id": None,
        "reason": f"{brand} is newly hot",
        "figures": {"sold_recent": sold, "trials_recent": 10},
    }  # fmt: skip


def test_niche_findings_read_the_analysis_document() -> None:
    levis, jump, bare = niche_findings(
        [
            _analysed("Levi's", 8),
            _analysed("Diesel", 8, kind="deal"),  # a listing's: each poll judges those
            {"kind": "sell_through_jump", "category_id": 7, "brand": "Lee", "niche": {},
             "figures": {"sold_recent": 4}},  # keys at the top level, sales in the figures
            {"kind": "new_hot_niche", "brand": "x"},
        ]
    )  # fmt: skip
    assert (levis.kind, levis.brand, levis.size, levis.sold) == (
        "new_hot_niche",
        "Levi's",
        "W32",
        8,
    )
    # The subject is the niche's four keys, wherever the document put them.
    flat = {"kind": "new_hot_niche", "category_id": 5, "brand": "Levi's", "size": "W32"}
    assert levis.subject == niche_findings([flat | {"condition": "Very good"}])[0].subject
    assert levis.subject != niche_findings([flat])[0].subject
    assert (jump.kind, jump.category_id, jump.brand, jump.sold) == (
        "sell_through_jump",
        7,
        "Lee",
        4,
    )
    assert jump.reason == "" and jump.niche == {}
    assert (bare.brand, bare.sold, bare.figures) == ("x", 0, {})


def test_niche_alerts_follow_each_rules_kinds_filters_and_confidence() -> None:
    findings = niche_findings([_analysed("Levi's", 8), _analysed("Diesel", 25)])
    rules = (
        _rule("levis", "new_hot_niche", brands=("levi's",)),  # case-insensitive
        _rule("sure", "new_hot_niche", min_confidence="high"),  # 20 sales or more
        _rule("jumps", "sell_through_jump"),
        # A niche has no title or price: listing-level filters do not hold it back.
        _rule("cheap", "new_hot_niche", price_max=Decimal(10), include_keywords=("none",)),
    )
    drafts = decide_niche_alerts(NicheAlerts(rules=rules, findings=findings))
    assert [(d.rule_id, d.kind, d.subject) for d in drafts] == [
        ("levis", "new_hot_niche", findings[0].subject),
        ("sure", "new_hot_niche", findings[1].subject),
        ("cheap", "new_hot_niche", findings[0].subject),
        ("cheap", "new_hot_niche", findings[1].subject),
    ]
    body = drafts[0].body
    assert isinstance(body, NicheAlert)
    assert body.to_json() == {  # the analysis' words and numbers, as it found them
        "niche": dict(findings[0].niche),
        "reason": "Levi's is newly hot",
        "figures": {"sold_recent": 8, "trials_recent": 10},
    }


def test_a_draft_carries_only_its_kinds_payload() -> None:
    body = NicheAlert(niche={}, reason="hot", figures={})
    with pytest.raises(ValueError, match="does not carry a 'deal'"):
        AlertDraft("r1", "deal", "niche:x", body)
    listing = ListingAlert(listing={}, niche=None, reason="new", figures={}, buy_below=None)
    with pytest.raises(ValueError):
        AlertDraft("r1", "monitor_error", "error:p1", listing)


def test_a_rule_that_names_no_deal_ratio_uses_the_one_deal_definitions() -> None:
    # The store keeps its own copy of the default (it cannot import the engine), and so does
    # the API's request body.
    assert NewRule(name="r", kinds=("deal",)).deal_ratio == DEAL_RATIO
    assert MonitorRule.model_fields["deal_ratio"].default == DEAL_RATIO
