"""The database goes away under a running, polling service and comes back.

A TCP relay stands between the service and PostgreSQL. It cuts every connection while a poll's
transaction is half sent (its writes on the wire, its COMMIT not), keeps refusing for a few
seconds, then lets connections through again. The service must answer 503 (never 500) while
the database is away, recover by itself (no restart), and leave no poll half-written:
every poll's events agree with the poll row, and every monitor's counts with its listings.
"""

from __future__ import annotations

import math
import random
import re
import socket
from collections import Counter, defaultdict
from collections.abc import Iterator
from decimal import Decimal
from functools import partial
from typing import Any

import httpx
import pytest
import trio
import trio_asyncio
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from api.settings import Settings
from store import ListingState, open_store
from tests.api.helpers import assert_envelope, signed_in, wait_active
from tests.conftest import start_service
from tests.engine.fake_market import FakeMarket

pytestmark = pytest.mark.postgres

URLS = (
    "https://www.vinted.fr/catalog?catalog[]=1904&brand_ids[]=53",
    "https://www.vinted.fr/catalog?catalog[]=1904&brand_ids[]=88",
)
OUTAGE_SECONDS = 5.0
# Poll ids travel as text bind parameters (engine/monitors/_poll.py names them so): the same id
# in a second statement of one connection means that poll's writes are being sent.
POLL_ID = re.compile(rb"poll_[0-9a-f]{32}")
MOVES: tuple[tuple[ListingState, ListingState], ...] = (
    ("open", "sold"),
    ("open", "deleted"),
    ("open", "reserved"),
    ("reserved", "open"),  # a reservation fell through
    ("deleted", "open"),  # relisted
)
RELISTED_FOR_SECONDS = 3.0  # three of the monitor's 1 s intervals


class DatabaseProxy:
    """A loopback TCP relay to PostgreSQL that can play an outage.

    `cut()` closes every relayed connection at once and, until `restore()`, closes each new
    connection as soon as it is accepted: what a restarting database looks like to the driver
    (queries in flight fail, connecting fails fast). `arm()` makes the next poll transaction
    caught half sent do the `cut()`, and remembers its poll id.
    """

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        # Bound before the Trio run starts so the `database_url` fixture knows the port; the
        # service only connects after `run` has started, and the backlog holds anything early.
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(128)
        self.port: int = self._socket.getsockname()[1]
        self._up = True
        self._armed = False
        self._links: set[trio.CancelScope] = set()
        self.down = trio.Event()
        self.cut_poll_id: str | None = None
        self.refused = 0  # connections closed at once while down

    async def run(
        self, task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Relay until cancelled; started once it accepts. Relay errors end only that link."""
        listener = trio.SocketListener(trio.socket.from_stdlib_socket(self._socket))
        await trio.serve_listeners(self._relay, [listener], task_status=task_status)

    def close(self) -> None:
        """Release the port (also when the test never started `run`)."""
        self._socket.close()

    def arm(self) -> None:
        self._armed = True

    def cut(self) -> None:
        self._up = self._armed = False
        for link in list(self._links):
            link.cancel()
        self.down.set()

    def restore(self) -> None:
        self._up = True

    async def _relay(self, client: trio.SocketStream) -> None:
        async with client:
            if not self._up:
                self.refused += 1
                return
            with trio.CancelScope() as link:
                self._links.add(link)
                try:
                    try:
                        server = await trio.open_tcp_stream(*self._upstream)
                    except OSError:
                        return  # PostgreSQL itself is not there: the client sees a close
                    async with server, trio.open_nursery() as pumps:
                        pumps.start_soon(self._pump, server, client, pumps.cancel_scope, False)
                        pumps.start_soon(self._pump, client, server, pumps.cancel_scope, True)
                finally:
                    self._links.discard(link)

    async def _pump(
        self,
        source: trio.SocketStream,
        sink: trio.SocketStream,
        link: trio.CancelScope,
        from_client: bool,
    ) -> None:
        last_poll: bytes | None = None
        try:
            while chunk := await source.receive_some(65536):
                await sink.send_all(chunk)
                if not from_client:
                    continue
                ids = POLL_ID.findall(chunk)
                # Cut after forwarding: the server holds the poll's uncommitted writes when its
                # client vanishes, which is the moment a half-written poll could come from.
                if self._armed and last_poll is not None and last_poll in ids:
                    self.cut_poll_id = last_poll.decode()
                    self.cut()
                if ids:
                    last_poll = ids[-1]
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        link.cancel()  # one direction ended: so does the connection


@pytest.fixture
def proxy(postgres_url: str) -> Iterator[DatabaseProxy]:
    url = make_url(postgres_url)
    relay = DatabaseProxy(url.host or "127.0.0.1", url.port or 5432)
    yield relay
    relay.close()


@pytest.fixture
def database_url(postgres_url: str, proxy: DatabaseProxy) -> str:
    """The service reaches PostgreSQL through the relay only (PostgreSQL only: SQLite has no
    connection to lose)."""
    return make_url(postgres_url).set(port=proxy.port).render_as_string(hide_password=False)


async def churn(market: FakeMarket, stop: trio.Event, first_new_id: int) -> None:
    """What a busy niche does between polls, until `stop`: listings appear, sell, are deleted,
    reserved and released, relisted, repriced. Seeded: the same story every run."""
    rng = random.Random(20260101)
    next_id = first_new_id
    relisted: dict[int, float] = {}  # item -> when it came back (trio time)
    while not stop.is_set():
        market.list(next_id, price=f"{rng.randint(5, 80)}.00")
        next_id += 1
        by_state: dict[ListingState, list[int]] = defaultdict(list)
        now = trio.current_time()
        for item, state in sorted(market.states.items()):
            # A relisted listing stays up a few polls: one sold or deleted again before any
            # poll could see it back is a story no monitor can know (its last answer stands).
            if now - relisted.get(item, -math.inf) >= RELISTED_FOR_SECONDS:
                by_state[state].append(item)
        for before, after in MOVES:
            if by_state[before] and rng.random() < 0.5:
                item = rng.choice(by_state[before])
                market.states[item] = after
                if (before, after) == ("deleted", "open"):
                    relisted[item] = now
        if by_state["open"] and rng.random() < 0.5:
            market.prices[rng.choice(by_state["open"])] = Decimal(f"{rng.randint(5, 80)}.00")
        with trio.move_on_after(0.25):
            await stop.wait()


async def polls(client: httpx.AsyncClient, monitor_id: str) -> int:
    response = await client.get(f"/api/monitoring/{monitor_id}")
    assert response.status_code == 200, response.text
    return int(response.json()["polls"])


async def polls_reach(client: httpx.AsyncClient, targets: dict[str, int]) -> None:
    """Until each monitor has recorded at least its target number of polls."""
    for monitor_id, at_least in targets.items():
        while await polls(client, monitor_id) < at_least:
            await trio.sleep(0.1)


async def start_monitors(client: httpx.AsyncClient) -> list[str]:
    monitor_ids: list[str] = []
    for url in URLS:
        started = await client.post(
            "/api/monitoring/start", json={"url": url, "interval_seconds": 1}
        )
        assert started.status_code == 202, started.text
        monitor_ids.append(str(started.json()["id"]))
    for monitor_id in monitor_ids:
        await wait_active(client, monitor_id)
    return monitor_ids


async def outage(client: httpx.AsyncClient, proxy: DatabaseProxy, monitor_ids: list[str]) -> None:
    """Cut the database in the middle of a poll's transaction, for `OUTAGE_SECONDS`: readiness
    and reads answer 503 `unavailable` all along (a 500 fails the test), then restore it."""
    proxy.arm()
    with trio.move_on_after(10):
        await proxy.down.wait()
    assert proxy.cut_poll_id is not None, "no poll transaction was caught half sent"
    went_down = trio.current_time()
    rounds = 0
    while trio.current_time() - went_down < OUTAGE_SECONDS:
        health = await client.get("/health")
        assert_envelope(health, 503, "unavailable")
        assert health.headers["retry-after"]
        for path in (
            "/api/monitoring",
            *(f"/api/monitoring/{m}" for m in monitor_ids),
            f"/api/monitoring/{monitor_ids[0]}/listings",
        ):
            assert_envelope(await client.get(path), 503, "unavailable")
        rounds += 1
        await trio.sleep(0.25)
    assert rounds >= 3, "too few requests answered during the outage to judge"
    assert proxy.refused > 0, "nothing tried to reconnect during the outage"
    proxy.restore()


async def test_service_rides_out_a_database_outage_without_half_written_polls(
    settings: Settings,
    market: FakeMarket,
    proxy: DatabaseProxy,
    postgres_url: str,
    nursery: trio.Nursery,
) -> None:
    for item in range(1, 41):
        market.list(item, price=f"{item}.00")
    await nursery.start(proxy.run)
    settings = settings.model_copy(update={"min_poll_seconds": 1})
    freeze = trio.Event()
    async with trio.open_nursery() as life:  # the service's one and only life: no restart
        service, stop = await start_service(life, settings, market)
        async with service.client() as client:
            await signed_in(client)
            monitor_ids = await start_monitors(client)
            life.start_soon(churn, market, freeze, 1000)
            with trio.fail_after(60):
                await polls_reach(client, {m: 3 for m in monitor_ids})
            before = {m: await polls(client, m) for m in monitor_ids}

            await outage(client, proxy, monitor_ids)

            with trio.fail_after(60):
                while (await client.get("/health")).status_code != 200:
                    await trio.sleep(0.2)
            # Crashed actors restart with a doubling backoff (1, 2, 4, 8 s, see
            # engine/_supervisor.py): polls resume a few seconds after the database.
            with trio.fail_after(60):
                await polls_reach(client, {m: n + 2 for m, n in before.items()})
            for monitor_id in monitor_ids:
                body = (await client.get(f"/api/monitoring/{monitor_id}")).json()
                assert body["status"] == "active", body

            # Freeze the market and let every monitor finish a whole poll after that (two more
            # recorded: one may have begun before), to compare the database with the truth.
            freeze.set()
            settled = {m: await polls(client, m) + 2 for m in monitor_ids}
            with trio.fail_after(60):
                await polls_reach(client, settled)
        stop.set()

    cut_poll_id = proxy.cut_poll_id
    assert cut_poll_id is not None
    # Straight to PostgreSQL, not through the relay, with the service gone: nothing moves.
    async with trio_asyncio.open_loop(), open_store(postgres_url) as store:
        for monitor_id in monitor_ids:
            await store.unit(partial(audit, monitor_id=monitor_id, market=market))
        orphans, cut_rows = await store.unit(partial(_orphans_and, poll_id=cut_poll_id))
    assert orphans == 0, "events of polls that were never recorded"
    assert cut_rows == (0, 0), "the poll cut before its COMMIT left rows behind"


def _scalar(db: Session, sql: str, **params: Any) -> int:
    return int(db.scalar(text(sql), params) or 0)


def _orphans_and(db: Session, poll_id: str) -> tuple[int, tuple[int, int]]:
    orphans = _scalar(
        db,
        "SELECT count(*) FROM listing_events e LEFT JOIN polls p ON p.id = e.poll_id"
        " WHERE p.id IS NULL",
    )
    cut_poll = _scalar(db, "SELECT count(*) FROM polls WHERE id = :p", p=poll_id)
    cut_events = _scalar(db, "SELECT count(*) FROM listing_events WHERE poll_id = :p", p=poll_id)
    return orphans, (cut_poll, cut_events)


def audit(db: Session, monitor_id: str, market: FakeMarket) -> None:
    """Every recorded poll of `monitor_id` is whole, as `store/monitors/polls.py` `record_poll`
    writes one: `new` counts its `new` events, `changed` the distinct listings with any other
    event (one listing may have a price and a counts event in the same poll)."""
    m = {"m": monitor_id}
    monitor = (
        db.execute(
            text(
                "SELECT polls, open_count, reserved_count, sold_count, deleted_count"
                " FROM monitors WHERE id = :m"
            ),
            m,
        )
    ).one()
    poll_rows = (
        db.execute(text("SELECT id, new, changed, error FROM polls WHERE monitor_id = :m"), m)
    ).all()
    events = (
        db.execute(
            text(
                "SELECT poll_id, item_id, kind, from_state, to_state FROM listing_events"
                " WHERE monitor_id = :m ORDER BY id"
            ),
            m,
        )
    ).all()
    listings: dict[int, str] = {
        item: state
        for item, state in db.execute(
            text("SELECT item_id, state FROM listings WHERE monitor_id = :m"), m
        )
    }
    grouped: dict[str, int] = {
        state: count
        for state, count in db.execute(
            text("SELECT state, count(*) FROM listings WHERE monitor_id = :m GROUP BY state"), m
        )
    }

    by_poll: dict[str, list[Any]] = defaultdict(list)
    for event in events:
        by_poll[event.poll_id].append(event)
    assert set(by_poll) <= {p.id for p in poll_rows}, "events of a poll that was not recorded"
    for poll in poll_rows:
        written = by_poll.get(poll.id, [])
        new = sum(e.kind == "new" for e in written)
        changed = len({e.item_id for e in written if e.kind != "new"})
        assert (new, changed) == (poll.new, poll.changed), (poll, written)
        assert {e.kind for e in written} <= {"new", "state", "price", "counts"}
        if poll.error is not None:
            assert not written and poll.new == poll.changed == 0, poll
    assert monitor.polls == sum(p.error is None for p in poll_rows)

    # Each listing: exactly one `new` event, and its state events chain from it to its state.
    new_items = Counter(e.item_id for e in events if e.kind == "new")
    assert set(new_items) == set(listings) and set(new_items.values()) == {1}
    replayed: dict[int, str] = {}
    for event in events:
        if event.kind == "new":
            replayed[event.item_id] = "open"
        elif event.kind == "state":
            assert event.from_state == replayed[event.item_id], event
            replayed[event.item_id] = event.to_state
    assert replayed == listings

    counts = {
        "open": monitor.open_count,
        "reserved": monitor.reserved_count,
        "sold": monitor.sold_count,
        "deleted": monitor.deleted_count,
    }
    assert counts == {state: grouped.get(state, 0) for state in counts}

    # The frozen market, fully polled since: nothing lost, nothing stale.
    assert listings == {item: market.states[item] for item in listings}
    assert {i for i, s in market.states.items() if s == "open"} <= set(listings)
    moved_to = {e.to_state for e in events if e.kind == "state"}
    assert {"sold", "deleted", "reserved", "open"} <= moved_to, moved_to
