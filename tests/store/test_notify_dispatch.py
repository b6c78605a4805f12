"""The dispatcher's side of the outbox: claims that two nodes never share, outcomes that
deliver, retry, fail or disable, pacing, the delivery log and its pages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import trio

from store import ChannelBatch, DeliveryOutcome, Store
from tests.store.notify_helpers import add_niche_alerts, new_channel, new_monitor, new_rule, outbox

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def _alerts(*brands: str) -> list[dict[str, Any]]:
    return [
        {"kind": "new_hot_niche", "category_id": 5, "brand": b, "size": None, "condition": None,
         "niche": {"label": b, "sold": 3}, "reason": "hot", "figures": {}}
        for b in brands
    ]  # fmt: skip


async def _queued(store: Store, channels: int, *brands: str) -> tuple[str, list[str]]:
    """A workspace with `channels` channels and one alert per brand for each, due at T0."""
    monitor_id, workspace_id = await new_monitor(store)
    ids = [(await new_channel(store, workspace_id, f"c{i}")).id for i in range(channels)]
    await new_rule(store, workspace_id, ("new_hot_niche",))
    await add_niche_alerts(store, workspace_id, monitor_id, _alerts(*brands), now=T0)
    return workspace_id, ids


def _ok(batch: ChannelBatch, **fields: Any) -> DeliveryOutcome:
    values: dict[str, Any] = {"ok": True, "status_code": 200, "error": None, "retry_at": None}
    return DeliveryOutcome(
        channel_id=batch.channel.id,
        notification_ids=tuple(n.id for n in batch.notifications),
        latency_ms=12,
        **(values | fields),
    )


async def test_two_nodes_never_hold_the_same_channel(store: Store) -> None:
    _, channel_ids = await _queued(store, 3, "a", "b")
    first = await store.notify.claim_due("node-a", now=T0, channels=2)
    second = await store.notify.claim_due("node-b", now=T0)
    taken_a = {b.channel.id for b in first}
    taken_b = {b.channel.id for b in second}
    assert len(taken_a) == 2 and len(taken_b) == 1
    assert taken_a | taken_b == set(channel_ids) and not taken_a & taken_b
    assert all(len(b.notifications) == 2 for b in first + second)
    # Nothing left while the claims hold; once they lapse, another node takes over.
    assert await store.notify.claim_due("node-b", now=T0 + timedelta(seconds=59)) == []
    lapsed = await store.notify.claim_due("node-b", now=T0 + timedelta(seconds=61))
    assert {b.channel.id for b in lapsed} == set(channel_ids)
    # node-a reporting late (a retry, so its alerts stay due) logs its attempt but leaves
    # node-b's claim alone: nobody else gets the channel until node-b is done.
    late = T0 + timedelta(seconds=62)
    retry = _ok(first[0], ok=False, status_code=502, error="bad gateway", retry_at=late)
    await store.notify.record_outcome(retry, node_id="node-a", now=late)
    assert await store.notify.claim_due("node-c", now=late) == []
    await store.notify.release(first[0].channel.id, "node-b")
    [resumed] = await store.notify.claim_due("node-c", now=late)
    assert resumed.channel.id == first[0].channel.id


async def test_concurrent_claims_split_the_channels(store: Store) -> None:
    _, channel_ids = await _queued(store, 4, "a")
    results: dict[str, list[ChannelBatch]] = {}

    async def claim(node: str) -> None:
        results[node] = await store.notify.claim_due(node, now=T0)

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            for node in ("n1", "n2", "n3"):
                nursery.start_soon(claim, node)
    claimed = [b.channel.id for batches in results.values() for b in batches]
    assert sorted(claimed) == sorted(channel_ids)  # every channel once, none twice


async def test_batch_size_oldest_first_and_not_yet_due(store: Store) -> None:
    workspace_id, _ = await _queued(store, 1, "a", "b", "c")
    assert await store.notify.claim_due("n", now=T0 - timedelta(seconds=1)) == []
    assert await store.notify.next_due_at() == T0
    [batch] = await store.notify.claim_due("n", now=T0, batch=2)
    assert len(batch.notifications) == 2
    await store.notify.record_outcome(_ok(batch), node_id="n", now=T0)
    [rest] = await store.notify.claim_due("n", now=T0)
    assert len(rest.notifications) == 1
    assert {n.id for n in rest.notifications}.isdisjoint(n.id for n in batch.notifications)
    delivered, total = await store.notify.notifications(workspace_id, status="delivered")
    assert total == 2 and all(n.attempts == 1 and n.delivered_at == T0 for n in delivered)


async def test_success_retry_and_permanent_failure(store: Store) -> None:
    workspace_id, [channel_id] = await _queued(store, 1, "a")
    [batch] = await store.notify.claim_due("n", now=T0)
    retry_at = T0 + timedelta(seconds=30)
    failed = _ok(batch, ok=False, status_code=503, error="the server said 503", retry_at=retry_at)
    assert await store.notify.record_outcome(failed, node_id="n", now=T0) is None
    [note] = await outbox(store, workspace_id)
    assert (note.status, note.attempts, note.next_attempt_at) == ("pending", 1, retry_at)
    assert note.last_error == "the server said 503"
    channel = await store.notify.channel(workspace_id, channel_id)
    assert channel is not None and channel.health == "failing" and channel.failing_since == T0
    # Not before the retry time, and the claim was released for then.
    assert await store.notify.claim_due("n", now=retry_at - timedelta(seconds=1)) == []
    assert await store.notify.next_due_at() == retry_at
    [again] = await store.notify.claim_due("other", now=retry_at)
    paced = retry_at + timedelta(seconds=5)
    await store.notify.record_outcome(_ok(again, next_send_at=paced), node_id="other", now=retry_at)
    [note] = await outbox(store, workspace_id)
    assert (note.status, note.attempts, note.delivered_at) == ("delivered", 2, retry_at)
    channel = await store.notify.channel(workspace_id, channel_id)
    assert channel is not None and channel.health == "healthy"
    assert channel.last_success_at == retry_at and channel.next_send_at == paced
    # A new alert waits for the channel's pacing; a permanent failure fails it at once.
    monitor_id = note.monitor_id
    assert monitor_id is not None
    await add_niche_alerts(store, workspace_id, monitor_id, _alerts("b"), now=retry_at)
    assert await store.notify.claim_due("n", now=paced - timedelta(seconds=1)) == []
    [third] = await store.notify.claim_due("n", now=paced)
    permanent = _ok(third, ok=False, status_code=404, error="gone", retry_at=None, permanent=True)
    await store.notify.record_outcome(permanent, node_id="n", now=paced)
    failed_notes, total = await store.notify.notifications(workspace_id, status="failed")
    assert total == 1 and failed_notes[0].id == third.notifications[0].id
    assert await store.notify.claim_due("n", now=paced + timedelta(hours=1)) == []


async def test_failing_past_the_limit_disables_the_channel_once(store: Store) -> None:
    workspace_id, [channel_id] = await _queued(store, 1, "a")
    at = T0
    for hours in (0, 12, 25):
        at = T0 + timedelta(hours=hours)
        [batch] = await store.notify.claim_due("n", now=at)
        outcome = _ok(batch, ok=False, status_code=500, error="HTTP 500", retry_at=at)
        disabled = await store.notify.record_outcome(outcome, node_id="n", now=at)
        assert (disabled is None) == (hours < 24)
    assert disabled is not None and not disabled.enabled and disabled.health == "disabled"
    assert disabled.disabled_reason is not None and "24 hours" in disabled.disabled_reason
    assert "HTTP 500" in disabled.disabled_reason
    # Its pending alert is kept but not claimed while disabled, nor counted as due.
    assert [n.status for n in await outbox(store, workspace_id)] == ["pending"]
    assert await store.notify.claim_due("n", now=at + timedelta(hours=1)) == []
    assert await store.notify.next_due_at() is None
    # Re-enabling starts afresh, and the kept alert goes.
    enabled = await store.notify.update_channel(workspace_id, channel_id, enabled=True)
    assert enabled is not None and enabled.enabled
    assert enabled.disabled_reason is None and enabled.failing_since is None
    [batch] = await store.notify.claim_due("n", now=at + timedelta(hours=1))
    assert batch.channel.id == channel_id


async def test_delivery_log_pages_and_workspace_scope(store: Store) -> None:
    workspace_id, [channel_id] = await _queued(store, 1, "a")
    [batch] = await store.notify.claim_due("n", now=T0)
    await store.notify.record_outcome(_ok(batch), node_id="n", now=T0)
    for code in (200, 401, 200, 500):
        assert await store.notify.log_test(workspace_id, channel_id, code == 200, code, 5, None)
    page, total = await store.notify.deliveries(workspace_id, offset=1, limit=2)
    assert total == 5 and [d.status_code for d in page] == [200, 401]  # newest first
    [oldest], _ = await store.notify.deliveries(workspace_id, channel_id=channel_id, offset=4)
    assert not oldest.test and oldest.notification_ids == tuple(n.id for n in batch.notifications)
    tests = [d.test for d in (await store.notify.deliveries(workspace_id))[0]]
    assert tests == [True, True, True, True, False]
    # Another workspace sees none of it and cannot log against this channel.
    other, _ = await _queued(store, 0)
    assert await store.notify.deliveries(other) == ([], 0)
    assert await store.notify.deliveries(other, channel_id=channel_id) == ([], 0)
    assert not await store.notify.log_test(other, channel_id, True, 200, 5, None)
    assert (await store.notify.deliveries(workspace_id))[1] == 5
