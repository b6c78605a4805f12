"""Channels and rules: what is stored, effective rules, deleting, and workspace scoping."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any, cast

import pytest

from store import NewRule, NotFoundInWorkspace, RuleFilters, Store
from tests.store.notify_helpers import add_niche_alerts, new_channel, new_monitor, new_rule, outbox


async def test_channel_round_trip_and_secret(store: Store) -> None:
    _, workspace_id = await new_monitor(store)
    channel = await new_channel(store, workspace_id, "ops hook")
    assert channel.id.startswith("chn_") and channel.enabled and channel.health == "new"
    assert await store.notify.channels(workspace_id) == [channel]
    assert await store.notify.channel_secret(channel.id) == "sealed"
    renamed = await store.notify.update_channel(
        workspace_id, channel.id, name="renamed", secret_box="resealed", hint="…9a8b"
    )
    assert renamed is not None and (renamed.name, renamed.hint) == ("renamed", "…9a8b")
    assert await store.notify.channel_secret(channel.id) == "resealed"
    off = await store.notify.update_channel(workspace_id, channel.id, enabled=False)
    assert off is not None and off.health == "disabled"


async def test_rule_round_trip_keeps_filters_exactly(store: Store) -> None:
    monitor_id, workspace_id = await new_monitor(store)
    channel = await new_channel(store, workspace_id)
    filters = RuleFilters(
        price_min=Decimal("5.50"),
        price_max=Decimal("40"),
        brands=("Levi's",),
        sizes=("W32", "W33"),
        conditions=("Very good",),
        include_keywords=("501",),
        exclude_keywords=("stain",),
        exclude_sellers=("123", "bob"),
        business=False,
        min_confidence="medium",
    )
    wanted = NewRule(
        name="cheap",
        kinds=("deal", "price_drop"),
        monitor_id=monitor_id,
        filters=filters,
        deal_ratio=0.6,
        channel_ids=(channel.id,),
        mode="digest",
        digest_hour=7,
        quiet_start="22:00",
        quiet_end="07:00",
        timezone="Europe/Paris",
    )
    rule = await store.notify.add_rule(workspace_id, wanted)
    assert rule.id.startswith("rul_") and rule.as_new() == wanted
    assert await store.notify.rule(workspace_id, rule.id) == rule
    replaced = await store.notify.replace_rule(
        workspace_id, rule.id, replace(wanted, name="cheaper", filters=RuleFilters())
    )
    assert replaced is not None and replaced.created_at == rule.created_at
    assert (replaced.name, replaced.filters) == ("cheaper", RuleFilters())
    assert await store.notify.rules(workspace_id, monitor_id=monitor_id) == [replaced]
    assert await store.notify.rules(workspace_id, defaults_only=True) == []


async def test_effective_rules_own_else_workspace_defaults(store: Store) -> None:
    monitor_id, workspace_id = await new_monitor(store)
    other_monitor, _ = await new_monitor(store, workspace_id)
    default = await new_rule(store, workspace_id, ("new_listing",), name="default")
    off = await new_rule(store, workspace_id, ("deal",), name="off", enabled=False)
    assert await store.notify.effective_rules(workspace_id, monitor_id) == [default]
    own = await new_rule(store, workspace_id, ("deal",), monitor_id=monitor_id, name="own")
    assert await store.notify.effective_rules(workspace_id, monitor_id) == [own]
    assert await store.notify.effective_rules(workspace_id, other_monitor) == [default]
    # A monitor whose own rules are all disabled falls back to the defaults.
    await store.notify.replace_rule(workspace_id, own.id, replace(own.as_new(), enabled=False))
    assert await store.notify.effective_rules(workspace_id, monitor_id) == [default]
    # set_monitor_rules replaces the monitor's own rules, leaving the defaults be.
    made = await store.notify.set_monitor_rules(
        workspace_id,
        monitor_id,
        [NewRule(name="a", kinds=("deal",)), NewRule(name="b", kinds=("price_drop",))],
    )
    assert [(r.name, r.monitor_id) for r in made] == [("a", monitor_id), ("b", monitor_id)]
    assert await store.notify.rules(workspace_id, monitor_id=monitor_id) == made
    assert await store.notify.effective_rules(workspace_id, monitor_id) == made
    assert await store.notify.rules(workspace_id, defaults_only=True) == [default, off]


async def test_deleting_a_channel_takes_it_out_of_rules(store: Store) -> None:
    monitor_id, workspace_id = await new_monitor(store)
    kept = await new_channel(store, workspace_id, "kept")
    gone = await new_channel(store, workspace_id, "gone")
    both = await new_rule(store, workspace_id, ("new_hot_niche",), channel_ids=(kept.id, gone.id))
    only = await new_rule(store, workspace_id, ("new_hot_niche",), channel_ids=(gone.id,))
    alert = {"kind": "new_hot_niche", "brand": "x", "niche": {"sold": 1}}
    assert await add_niche_alerts(store, workspace_id, monitor_id, [alert]) == 3
    assert await store.notify.delete_channel(workspace_id, gone.id)
    assert not await store.notify.delete_channel(workspace_id, gone.id)
    after_both = await store.notify.rule(workspace_id, both.id)
    after_only = await store.notify.rule(workspace_id, only.id)
    assert after_both is not None and after_both.channel_ids == (kept.id,) and after_both.enabled
    # Left with no channel, a rule is disabled rather than widened to every channel.
    assert after_only is not None and after_only.channel_ids == () and not after_only.enabled
    assert {n.channel_id for n in await outbox(store, workspace_id)} == {kept.id}


async def test_another_workspace_sees_and_touches_nothing(store: Store) -> None:
    monitor_id, workspace_id = await new_monitor(store)
    channel = await new_channel(store, workspace_id)
    rule = await new_rule(store, workspace_id, ("deal",), channel_ids=(channel.id,))
    other_monitor, other = await new_monitor(store)
    assert await store.notify.channel(other, channel.id) is None
    assert await store.notify.channels(other) == []
    assert await store.notify.update_channel(other, channel.id, enabled=False) is None
    assert not await store.notify.delete_channel(other, channel.id)
    assert await store.notify.rule(other, rule.id) is None
    assert await store.notify.rules(other) == []
    assert await store.notify.replace_rule(other, rule.id, rule.as_new()) is None
    assert not await store.notify.delete_rule(other, rule.id)
    with pytest.raises(NotFoundInWorkspace):
        await new_rule(store, other, ("deal",), channel_ids=(channel.id,))
    with pytest.raises(NotFoundInWorkspace):
        await new_rule(store, other, ("deal",), monitor_id=monitor_id)
    with pytest.raises(NotFoundInWorkspace):
        await store.notify.set_monitor_rules(other, monitor_id, [NewRule("x", ("deal",))])
    with pytest.raises(NotFoundInWorkspace):  # all or nothing: the first rule is not kept
        await store.notify.set_monitor_rules(
            other,
            other_monitor,
            [NewRule("ok", ("deal",)), NewRule("bad", ("deal",), channel_ids=(channel.id,))],
        )
    assert await store.notify.rules(other) == []
    # No workspace at all (what the types forbid) reaches nothing either: the lookup fails
    # closed instead of widening to every workspace.
    nobody = cast(Any, None)
    assert await store.notify.channel(nobody, channel.id) is None
    assert await store.notify.update_channel(nobody, channel.id, enabled=False) is None
    assert not await store.notify.delete_channel(nobody, channel.id)
    assert await store.notify.rule(nobody, rule.id) is None
    assert not await store.notify.delete_rule(nobody, rule.id)
    # Everything of the first workspace is as it was.
    assert await store.notify.channel(workspace_id, channel.id) == channel
    assert await store.notify.rule(workspace_id, rule.id) == rule
    assert await store.notify.delete_rule(workspace_id, rule.id)
    assert await store.notify.rule(workspace_id, rule.id) is None


async def test_owner_email(store: Store) -> None:
    _, workspace_id = await new_monitor(store)
    email = await store.notify.owner_email(workspace_id)
    assert email is not None and "@" in email
    assert await store.notify.owner_email("ws_nobody") is None
