"""`list_notification_rules` and `set_notification_rules`: a monitor's alert rules (what
`GET /api/notifications/rules?monitor_id=` lists; setting replaces the monitor's own rules in
one transaction, as the rules page's Save does)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from api.http.auth import Principal
from api.mcp._registry import READ_ONLY, Annotations, Tool
from api.notifications import actions
from api.notifications.schemas import ID_PATTERN, MonitorRule, RuleOut
from api.services import services

# What an agent reads when a monitor's rules would answer more than 64 KB (50 rules at most,
# but each may hold six lists of 50 entries).
REST_RULES = (
    "Read the monitor's rules with GET /api/notifications/rules?monitor_id=<monitor_id> "
    "(the same token), which answers them whole."
)

MonitorId = Field(
    max_length=64,
    pattern=ID_PATTERN,
    description="The monitor's id (mon_...), from list_monitorings.",
)


class ListRulesArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", title="ListNotificationRulesArguments")

    monitor_id: str = MonitorId


class SetRulesArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", title="SetNotificationRulesArguments")

    monitor_id: str = MonitorId
    rules: list[MonitorRule] = Field(
        max_length=actions.MAX_RULES,
        description="The monitor's rules after this call (replacing its own rules); an empty "
        "list makes the monitor follow the workspace's default rules again.",
    )


class MonitorRules(BaseModel):
    monitor_id: str
    rules: list[RuleOut] = Field(description="The monitor's own rules.")
    defaults: list[RuleOut] = Field(
        description="The workspace's default rules, which apply while `rules` has no enabled rule."
    )
    effective: str = Field(description="Which of the two apply, in words.")


async def _answer(workspace_id: str, monitor_id: str) -> MonitorRules:
    svc = services()
    own = await actions.list_rules(svc.store, workspace_id, monitor_id)
    defaults = await svc.store.notify.rules(workspace_id, defaults_only=True)
    uses_own = any(r.enabled for r in own)
    return MonitorRules(
        monitor_id=monitor_id,
        rules=[actions.rule_out(r) for r in own],
        defaults=[actions.rule_out(r) for r in defaults],
        effective="the monitor's own enabled rules"
        if uses_own
        else "the workspace's enabled default rules (the monitor has no enabled rule of its own)",
    )


async def list_notification_rules(
    principal: Principal, arguments: ListRulesArguments
) -> MonitorRules:
    return await _answer(principal.workspace_id, arguments.monitor_id)


async def set_notification_rules(
    principal: Principal, arguments: SetRulesArguments
) -> MonitorRules:
    # The REST and page code path: ids of another workspace are `not_found`, limits apply.
    await actions.set_monitor_rules(
        services().store, principal.workspace_id, arguments.monitor_id, arguments.rules
    )
    return await _answer(principal.workspace_id, arguments.monitor_id)


LIST_TOOL = Tool(
    name="list_notification_rules",
    title="List a monitor's alert rules",
    description=(
        "The alert rules of a monitor (`monitor_id`): its own rules and the workspace's "
        "default rules, and which apply. A rule names the kinds of alert (new_listing, deal, "
        "price_drop, sell_through_jump, new_hot_niche, monitor_error), listing filters, the "
        "channels (empty: every channel), instant or daily digest, quiet hours and time zone."
    ),
    scope="read",
    input_model=ListRulesArguments,
    output_model=MonitorRules,
    annotations=READ_ONLY,
    handler=list_notification_rules,
    smaller=REST_RULES,
)

# Replaces the monitor's own rules wholesale: destructive, and the same call twice is the same.
REPLACES = Annotations(read_only=False, destructive=True, idempotent=True, open_world=False)

SET_TOOL = Tool(
    name="set_notification_rules",
    title="Set a monitor's alert rules",
    description=(
        "Replace the monitor's own alert rules with `rules` (all at once; an empty list "
        "returns it to the workspace defaults). Each rule: `name`, `kinds` (at least one of "
        "new_listing, deal, price_drop, sell_through_jump, new_hot_niche, monitor_error), "
        "optional `deal_ratio` (0-1, default 0.7: a deal asks at most that share of its "
        "niche's median sold price), `filters` (price_min/price_max, brands, sizes, "
        "conditions, include_keywords, exclude_keywords, exclude_sellers, business, "
        "min_confidence), `channel_ids` (empty: every channel), `mode` instant or digest with "
        "`digest_hour`, `quiet_start`/`quiet_end` (HH:MM) and `timezone` (IANA). Ids of "
        "another workspace are not_found; at most 50 rules per workspace."
    ),
    scope="write",
    input_model=SetRulesArguments,
    output_model=MonitorRules,
    annotations=REPLACES,
    handler=set_notification_rules,
    smaller=REST_RULES,
)
