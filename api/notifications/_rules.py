"""Rule use cases: list, create, read, replace, delete, and replace a monitor's own rules.

The request model (`RuleIn`) has already checked each field; here the references are checked:
a monitor or channel id must be one of the caller's workspace, else `NotFound` (another
workspace's id answers exactly like an id that does not exist, and nothing is written).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from api.http.errors import NotFound, deleted, found
from api.notifications._channels import CHANNEL, LimitReached
from api.notifications.schemas import MonitorRule, RuleIn, RuleOut
from store import (
    ChannelRecord,
    NewRule,
    NotFoundInWorkspace,
    QuotaFull,
    RuleFilters,
    RuleRecord,
    Store,
    record_fields,
)

MAX_RULES = 50
RULE = "notification rule"  # what a 404 says is missing


def _decimal(value: float | None) -> Decimal | None:
    # Its shortest decimal spelling: 12.1 is 12.1, not 12.0999999...
    return None if value is None else Decimal(repr(value))


def new_rule(data: MonitorRule, monitor_id: str | None) -> NewRule:
    """The store's `NewRule` for a validated rule of `monitor_id` (None: a default)."""
    f = data.filters
    return NewRule(
        name=data.name,
        kinds=tuple(data.kinds),
        monitor_id=monitor_id,
        filters=RuleFilters(
            price_min=_decimal(f.price_min),
            price_max=_decimal(f.price_max),
            brands=tuple(f.brands),
            sizes=tuple(f.sizes),
            conditions=tuple(f.conditions),
            include_keywords=tuple(f.include_keywords),
            exclude_keywords=tuple(f.exclude_keywords),
            exclude_sellers=tuple(f.exclude_sellers),
            business=f.business,
            min_confidence=f.min_confidence,
        ),
        deal_ratio=data.deal_ratio,
        channel_ids=tuple(data.channel_ids),
        mode=data.mode,
        digest_hour=data.digest_hour,
        quiet_start=data.quiet_start,
        quiet_end=data.quiet_end,
        timezone=data.timezone,
        enabled=data.enabled,
    )


def rule_out(rule: RuleRecord) -> RuleOut:
    return RuleOut.model_validate({**record_fields(rule), "filters": record_fields(rule.filters)})


async def owned_monitor_id(store: Store, workspace_id: str, monitor_id: str) -> str:
    if await store.monitors.get(monitor_id, workspace_id) is None:
        raise NotFound("monitor")
    return monitor_id


async def _check_references(store: Store, workspace_id: str, rules: list[NewRule]) -> None:
    """Every monitor and channel a rule names is the workspace's; else `NotFound`."""
    monitors = {r.monitor_id for r in rules if r.monitor_id is not None}
    for monitor_id in monitors:
        await owned_monitor_id(store, workspace_id, monitor_id)
    wanted = {c for r in rules for c in r.channel_ids}
    if wanted:
        known = {c.id for c in await store.notify.channels(workspace_id)}
        if wanted - known:
            raise NotFound(CHANNEL)


def _limit(count: int) -> None:
    if count > MAX_RULES:
        raise _rules_full()


def _rules_full() -> LimitReached:
    return LimitReached(
        f"A workspace has at most {MAX_RULES} notification rules",
        suggest=["Delete rules you no longer use, or widen one rule's filters"],
        extra={"limit": MAX_RULES},
    )


async def list_rules(
    store: Store, workspace_id: str, monitor_id: str | None = None
) -> list[RuleRecord]:
    """Every rule of the workspace, or one monitor's own rules (`NotFound` for a monitor of
    another workspace)."""
    if monitor_id is not None:
        await owned_monitor_id(store, workspace_id, monitor_id)
    return await store.notify.rules(workspace_id, monitor_id=monitor_id)


async def owned_rule(store: Store, workspace_id: str, rule_id: str) -> RuleRecord:
    return found(await store.notify.rule(workspace_id, rule_id), RULE)


async def create_rule(store: Store, workspace_id: str, data: RuleIn) -> RuleRecord:
    rule = new_rule(data, data.monitor_id)
    await _check_references(store, workspace_id, [rule])
    notify = store.notify
    _limit(len(await notify.rules(workspace_id)) + 1)
    try:
        return await notify.add_rule(workspace_id, rule, at_most=MAX_RULES)
    except NotFoundInWorkspace as err:  # deleted between the check and the write
        raise NotFound(err.kind) from err
    except QuotaFull as full:  # simultaneous creations all passed the count above
        raise _rules_full() from full


async def replace_rule(store: Store, workspace_id: str, rule_id: str, data: RuleIn) -> RuleRecord:
    await owned_rule(store, workspace_id, rule_id)
    rule = new_rule(data, data.monitor_id)
    await _check_references(store, workspace_id, [rule])
    try:
        replaced = await store.notify.replace_rule(workspace_id, rule_id, rule)
    except NotFoundInWorkspace as err:
        raise NotFound(err.kind) from err
    return found(replaced, RULE)


async def delete_rule(store: Store, workspace_id: str, rule_id: str) -> None:
    deleted(await store.notify.delete_rule(workspace_id, rule_id), RULE)


async def set_monitor_rules(
    store: Store, workspace_id: str, monitor_id: str, rules: list[MonitorRule]
) -> list[RuleRecord]:
    """Replace the monitor's own rules with `rules` in one transaction (an empty list: the
    monitor follows the workspace's default rules again)."""
    await owned_monitor_id(store, workspace_id, monitor_id)
    wanted = [new_rule(r, monitor_id) for r in rules]
    await _check_references(store, workspace_id, wanted)
    notify = store.notify
    others = [r for r in await notify.rules(workspace_id) if r.monitor_id != monitor_id]
    _limit(len(others) + len(wanted))
    try:
        return await notify.set_monitor_rules(workspace_id, monitor_id, wanted, at_most=MAX_RULES)
    except NotFoundInWorkspace as err:
        raise NotFound(err.kind) from err
    except QuotaFull as full:  # rules created meanwhile: counted again with the write
        raise _rules_full() from full


@dataclass(frozen=True, slots=True)
class AlertSummary:
    """What a monitor's page says about its alerts: the rules that apply and the channels."""

    own: list[RuleRecord]
    defaults: list[RuleRecord]
    channels: list[ChannelRecord]

    @property
    def applied(self) -> list[RuleRecord]:
        mine = [r for r in self.own if r.enabled]
        return mine or [r for r in self.defaults if r.enabled]


async def alert_summary(store: Store, workspace_id: str, monitor_id: str) -> AlertSummary:
    notify = store.notify
    return AlertSummary(
        own=await notify.rules(workspace_id, monitor_id=monitor_id),
        defaults=await notify.rules(workspace_id, defaults_only=True),
        channels=await notify.channels(workspace_id),
    )
