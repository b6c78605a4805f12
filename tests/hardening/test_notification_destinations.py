"""Alert destinations (#33, item 7): what a refusal says, who may be mailed, what a mask shows.

Before:
- a webhook URL refused for its address said what the host resolves to ("resolves to a
  non-public address (10.20.30.40)"): asking about names one by one mapped a private network;
- an e-mail channel mailed any address typed into it, never confirmed: ten tests a minute to
  a stranger, and every alert after;
- the channel's mask showed the whole host, which for some services (`<id>.m.pipedream.net`)
  is the secret.

Now refusals never carry a resolved address; an e-mail channel sends nothing (nothing is even
queued) until its recipient opens the link mailed to them, unless it is the caller's own
confirmed address; and masks show a host's registered name only.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from api.notifications._channels import refused
from engine import decide_poll
from engine.notifications import (
    DestinationRefused,
    Outgoing,
    SecretBox,
    check_destination,
    deliver,
    open_outbound,
)
from scrapers import UrlRefused, check_catalogue_url
from store import NewChannel, NewConfirmation, Store
from tests.api.helpers import assert_envelope, register, signed_in
from tests.conftest import RunningService, unique_email
from tests.store.notify_helpers import listing, new_channel, new_monitor, new_rule, outbox, poll

PRIVATE = ["10.20.30.40", "192.168.7.8", "172.16.9.9", "fd12:3456::9", "127.0.0.1",
           "169.254.169.254", "100.64.1.2"]  # fmt: skip
CONFIRM_SUBJECT = "Confirm Nichescope alerts to this address"
T0 = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)


def _resolving_to(address: str):  # type: ignore[no-untyped-def]
    async def resolve(host: str, port: int) -> list[str]:
        return [address]

    return resolve


async def _public(host: str, port: int) -> list[str]:
    return ["93.184.215.14"]


# -- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize("address", PRIVATE)
async def test_a_refused_webhook_never_says_what_its_host_resolves_to(address: str) -> None:
    url = "https://build.intranet.example.com/hook"
    with pytest.raises(DestinationRefused) as made:
        await check_destination("webhook", {"url": url}, resolver=_resolving_to(address))
    answer = refused(made.value)  # the 422 the API and the Alerts page show
    assert answer.status == 422 and answer.extra == {"field": "url"}
    shown = f"{made.value.reason} {answer.message} {' '.join(answer.suggest)}"
    assert address not in shown and "resolves to" in shown, shown

    # At delivery (a name that turned private since): the error the log and the channel keep.
    destination = await check_destination("webhook", {"url": url}, resolver=_public)
    box = SecretBox("a secret key of this service, long enough")
    alert = Outgoing("ntf_x", {"type": "listing.new", "version": 1, "id": "ntf_x"})
    async with open_outbound(resolver=_resolving_to(address)) as http:
        result = await deliver(_Webhook(), box.open(box.seal(destination.secrets)), [alert], http)
    assert not result.ok and result.error is not None and address not in result.error

    # And a catalogue URL refused the same way (a 400 `url_refused` quotes the reason).
    with pytest.raises(UrlRefused) as catalogue:
        await check_catalogue_url(
            "https://www.vinted.fr/catalog", (), resolver=_resolving_to(address)
        )
    assert address not in catalogue.value.reason and address not in str(catalogue.value)
    assert catalogue.value.address is not None  # kept for the operator's log only


class _Webhook:
    id = "chn_x"
    kind = "webhook"


# -- e-mail channels wait for their recipient ---------------------------------------------------


def _link(message: str) -> str:
    match = re.search(r"/notifications/confirm\?token=([A-Za-z0-9_\-]+)", message)
    assert match, message
    return match.group(1)


async def test_an_email_channel_sends_nothing_until_its_recipient_confirms(
    service: RunningService,
) -> None:
    stranger = unique_email("stranger")
    base = "/api/notifications/channels"
    spam = "WIN A PRIZE at prizes.example.org"
    async with service.client() as owner:
        own = await signed_in(owner)  # confirmed through its trial link
        made = await owner.post(base, json={"kind": "email", "name": spam, "email": stranger})
        assert made.status_code == 201, made.text
        channel = made.json()
        tests = [await owner.post(f"{base}/{channel['id']}/test") for _ in range(10)]
        for answer in tests:
            assert_envelope(answer, 409, "channel_unconfirmed")
        assert channel["confirmed"] is False and channel["health"] == "unconfirmed"

        # The stranger got one message: the question, in our words only.
        [question] = await service.mails(f"To: {stranger}")
        assert CONFIRM_SUBJECT in question and spam not in question and own not in question
        log = (await owner.get("/api/notifications/deliveries")).json()
        assert log["total"] == 0

        # Asked again: a new link, and the first one dies.
        again = await owner.post(f"{base}/{channel['id']}/send-confirmation")
        assert again.status_code == 200, again.text
        first, second = [_link(m) for m in await service.mails(f"To: {stranger}", count=2)]
        async with service.client() as recipient:  # not signed in: anyone with the mail
            dead = await recipient.post("/api/notifications/confirm-email", json={"token": first})
            assert_envelope(dead, 400, "invalid_token")
            yes = await recipient.post("/api/notifications/confirm-email", json={"token": second})
            assert yes.status_code == 200, yes.text
        confirmed = (await owner.get(f"{base}/{channel['id']}")).json()
        assert confirmed["confirmed"] is True and confirmed["health"] == "new"
        tested = await owner.post(f"{base}/{channel['id']}/test")
        assert tested.status_code == 200 and tested.json()["ok"] is True, tested.text
        assert len(await service.mails(f"To: {stranger}", count=3)) == 3
        done = await owner.post(f"{base}/{channel['id']}/send-confirmation")
        assert_envelope(done, 409, "already_confirmed")

        # The owner's own confirmed address is theirs to use at once: no question mailed.
        mine = await owner.post(base, json={"kind": "email", "name": "me", "email": own})
        assert mine.status_code == 201 and mine.json()["confirmed"] is True, mine.text
        assert not [m for m in service.outbox() if CONFIRM_SUBJECT in m and f"To: {own}" in m]


async def test_an_unconfirmed_account_and_a_busy_stranger(service: RunningService) -> None:
    target = unique_email("target")
    async with service.client() as newcomer:
        email = unique_email()
        await register(newcomer, email)
        login = await newcomer.post(
            "/api/auth/login", json={"email": email, "password": "correct horse battery"}
        )
        assert login.status_code == 200
        body = {"kind": "email", "name": "me", "email": email}
        own = await newcomer.post("/api/notifications/channels", json=body)
        # An address nobody proved is not "their own" yet: it waits like any other.
        assert own.status_code == 201 and own.json()["confirmed"] is False, own.text

    # Five questions per window reach one address, whichever workspaces ask.
    answers = []
    for _ in range(6):
        async with service.client() as someone:
            # No trial: six from one client address would pass its own mail limit.
            await signed_in(someone, trial=False)
            body = {"kind": "email", "name": "x", "email": target}
            answers.append(await someone.post("/api/notifications/channels", json=body))
    assert [a.status_code for a in answers] == [201] * 5 + [429], [a.text for a in answers]
    assert len(await service.mails(f"To: {target}", count=5)) == 5


async def test_no_alert_is_queued_for_a_recipient_who_never_agreed(store: Store) -> None:
    monitor_id, workspace_id = await new_monitor(store)
    hook = await new_channel(store, workspace_id)
    waiting = await store.notify.add_channel(
        NewChannel(
            workspace_id=workspace_id,
            kind="email",
            name="a stranger",
            hint="s***@example.com",
            secret_box="sealed",
            awaiting_confirmation=True,
        )
    )
    assert waiting.health == "unconfirmed" and hook.confirmed
    await new_rule(store, workspace_id, ("new_listing",))
    await store.monitors.record_poll(monitor_id, poll(T0, [listing(1, "20")]), decide=decide_poll)
    at = T0 + timedelta(minutes=1)
    await store.monitors.record_poll(monitor_id, poll(at, [listing(2, "9")]), decide=decide_poll)
    assert {n.channel_id for n in await outbox(store, workspace_id)} == {hook.id}
    claimed = await store.notify.claim_due("node-a", now=at + timedelta(minutes=1))
    assert [b.channel.id for b in claimed] == [hook.id]

    # The recipient opens the link: what is found from then on goes to them too.
    await store.confirmations.add(
        NewConfirmation(
            token_hash="h" * 64,
            purpose="channel",
            email="s@example.com",
            expires_at=at + timedelta(days=2),
            channel_id=waiting.id,
        )
    )
    assert (await store.confirmations.use("h" * 64, "account")).outcome == "unknown_token"
    assert (await store.confirmations.use("h" * 64, "channel")).outcome == "confirmed"
    later = at + timedelta(minutes=2)
    await store.monitors.record_poll(monitor_id, poll(later, [listing(3, "9")]), decide=decide_poll)
    queued = {(n.channel_id, n.subject) for n in await outbox(store, workspace_id)}
    assert (waiting.id, "item:3") in queued and (waiting.id, "item:2") not in queued


# -- masks --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "given", "hint", "secret"),
    [
        ("webhook", "https://a1b2c3d4e5f6.m.pipedream.net/", "https://*.pipedream.net/",
         "a1b2c3d4e5f6"),
        ("webhook", "https://tunnel-7f3k9q.ngrok.app/in", "https://*.ngrok.app/…", "7f3k9q"),
        ("webhook", "https://hooks.shop-42.example.co.uk:8443/in/token123abc",
         "https://*.example.co.uk:8443/…3abc", "shop-42"),
        ("email", "alerts@inbound.x9y8z7.postmarkapp.com", "a***@*.postmarkapp.com", "x9y8z7"),
        ("email", "someone@example.com", "s***@example.com", "someone"),
    ],
)  # fmt: skip
async def test_a_mask_shows_the_registered_name_never_the_host(
    kind: str, given: str, hint: str, secret: str
) -> None:
    field = "url" if kind == "webhook" else "to"
    destination = await check_destination(kind, {field: given}, resolver=_public)
    assert destination.hint == hint and secret not in destination.hint
