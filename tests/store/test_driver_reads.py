"""The hottest reads go to the driver as SQL compiled once (`store/_db/driver_reads.py`):
what they return must be exactly what SQLAlchemy's typed ORM path returns for the same rows,
value for value and type for type, on both databases."""

from __future__ import annotations

import sqlite3
import uuid
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import psycopg
import pytest
import trio
from sqlalchemy import BigInteger, Boolean, Float, Integer, Numeric, Text, select
from sqlalchemy.exc import DBAPIError, OperationalError, ProgrammingError
from sqlalchemy.orm import Session

from engine import decide_poll
from store import DatabaseUnavailable, NewRun, ObservedListing, Store, open_store
from store._db import unit as unit_module
from store._db.driver_reads import DriverRead
from store.monitors import listing_pages
from store.monitors.models import Listing, Monitor
from store.monitors.queries import listing_record, monitor_record
from store.runs import analysis_views
from store.runs.models import Analysis, DashboardPin, Run
from store.runs.queries import analysis_record, newest_runs, run_record
from tests.store.test_pool_recovery import _terminate_pool
from tests.store.test_store_monitors import _monitor, _outcome

PARIS = timezone(timedelta(hours=1))


def _sighting(item_id: int) -> ObservedListing:
    """Every kind of value a listing's columns hold, varied by item: decimals with and
    without cents, none; times in another zone; true, false and unknown flags."""
    odd = item_id % 2 == 1
    return ObservedListing(
        item_id=item_id,
        title=f"Jacket {item_id}" if odd else None,
        brand="Zara" if odd else None,
        size="M",
        condition="very_good",
        category_id=1904 if odd else None,
        price=Decimal(f"{item_id}.50") if item_id % 3 else None,
        currency="EUR",
        favourites=item_id,
        views=None if odd else 7,
        seller_id=1000 + item_id,
        url=f"https://www.vinted.fr/items/{item_id}",
        listed_at=datetime(2026, 11, 1, 12, item_id % 60, tzinfo=PARIS) if odd else None,
        total_price=Decimal(f"{item_id}.90") if item_id % 3 else None,
        service_fee=Decimal("0.40"),
        promoted=odd,
        seller_business=None if item_id % 3 == 0 else odd,
    )


async def test_a_listings_page_reads_as_the_orm_reads_it(store: Store) -> None:
    monitor_id, workspace_id = await _monitor(store)
    seen = [_sighting(i) for i in range(1, 41)]
    await store.monitors.record_poll(monitor_id, _outcome(store, seen, []), decide=decide_poll)
    await store.monitors.record_poll(
        monitor_id, _outcome(store, seen[:30], [], minutes=5), decide=decide_poll
    )

    def both(db: Session) -> tuple[Any, list[Any]]:
        key = listing_pages.page_key(monitor_id, None)
        read = listing_pages.listing_page(db, key, workspace_id, 5, 30, None)
        rows = db.scalars(
            select(Listing).where(Listing.monitor_id == monitor_id).order_by(Listing.item_id)
        )
        return read, [listing_record(row) for row in rows][5:35]

    read, expected = await store.unit(both)
    assert isinstance(read, listing_pages.PageRead)
    assert read.page.listings == expected and len(expected) == 30
    for got, want in zip(read.page.listings, expected, strict=True):
        for name in ("price", "listed_at", "first_seen_at", "promoted", "in_feed"):
            assert type(getattr(got, name)) is type(getattr(want, name)), name
    seventh = read.page.listings[1]  # given at +01:00, read back as the same instant in UTC
    assert seventh.item_id == 7 and seventh.listed_at == seen[6].listed_at
    assert seventh.listed_at is not None and seventh.listed_at.utcoffset() == timedelta(0)
    assert read.page.total == 40


async def test_the_dashboards_reads_are_the_orms(store: Store) -> None:
    monitor_id, workspace_id = await _monitor(store)
    runs = []
    for i, monitor in enumerate((monitor_id, None, monitor_id)):
        run = await store.runs.create(
            NewRun(
                run_id=f"run_{uuid.uuid4().hex[:12]}",
                workspace_id=workspace_id,
                label=f"run {i}",
                source="scrape",
                url="https://www.vinted.fr/catalog",
                monitor_id=monitor,
                max_items=100,
            )
        )
        await store.runs.mark_running(run.id)
        runs.append(run)
    for run in runs[:2]:
        await store.runs.succeed_with_analysis(
            run, analysis_id=f"ana_{uuid.uuid4().hex[:12]}", source="scrape",
            result_json='{"niches": []}', items=3,
        )  # fmt: skip

    def both(db: Session) -> tuple[Any, ...]:
        analyses = db.scalars(select(Analysis).where(Analysis.workspace_id == workspace_id))
        expected = []
        for analysis in analyses:
            run = db.get(Run, analysis.run_id)
            monitor = db.get(Monitor, run.monitor_id) if run and run.monitor_id else None
            expected.append(
                analysis_views.AnalysisOrigin(
                    analysis_record(analysis),
                    None if run is None else run_record(run),
                    None if monitor is None else monitor_record(monitor),
                )
            )
        read = [
            analysis_views.analysis_origin(db, e.analysis.id, workspace_id, with_result=True)
            for e in expected
        ]
        newest = newest_runs(db, workspace_id, 10)
        ordered = db.scalars(
            select(Run).where(Run.workspace_id == workspace_id)
            .order_by(Run.created_at.desc(), Run.id.desc())
        )  # fmt: skip
        return read, expected, newest, [run_record(r) for r in ordered]

    read, expected, newest, ordered = await store.unit(both)
    assert read == expected and len(expected) == 2
    assert {e.monitor is None for e in expected} == {True, False}  # with and without one
    assert newest == ordered and len(newest) == 3
    assert all(isinstance(r.created_at, datetime) and r.created_at.tzinfo for r in newest)


async def test_another_workspace_reads_nothing(store: Store) -> None:
    monitor_id, _ = await _monitor(store)
    await store.monitors.record_poll(
        monitor_id, _outcome(store, [_sighting(1)], []), decide=decide_poll
    )
    _, stranger = await _monitor(store)
    key = listing_pages.page_key(monitor_id, None)
    page = await store.unit(lambda db: listing_pages.listing_page(db, key, stranger, 0, 10, None))
    assert page is None


async def test_a_parameter_used_twice_and_the_types_declared(store: Store) -> None:
    """Positional drivers (sqlite3) get each parameter where the SQL names it, repeats
    included; each column is typed by its declared type (numeric to `Decimal`)."""
    read = DriverRead(
        "SELECT :n + 1, :n * 2, CAST(:price AS NUMERIC(10, 2))",
        [Integer(), Integer(), Numeric(10, 2)],
        lambda *values: values,
    )
    rows = await store.unit(lambda db: read.all(db, {"n": 20, "price": "3.50"}))
    assert rows == [(21, 40, Decimal("3.50"))]
    assert isinstance(rows[0][2], Decimal)


_AWKWARD_TEXT = 'quote " back \\ slash\nnew line\ttab \x01 nul-free, é, 日本, 🧥'


async def test_rows_read_in_one_step_are_the_rows_read_one_by_one(store: Store) -> None:
    """A read naming its columns gets, on SQLite, every row at once as one JSON array: the
    same values, types and order as row by row (text JSON must escape, integers beyond 2**53,
    NULLs, numerics and flags), and no rows as none. PostgreSQL reads rows either way."""
    sql = (
        "SELECT * FROM (SELECT :text AS t, 9007199254740993 AS big, NULL AS absent, "
        "CAST(:price AS NUMERIC(10, 2)) AS price, 1 = 1 AS flag, 2 AS n "
        "UNION ALL SELECT 'plain', -5, NULL, NULL, 1 = 0, 1) rows_ "
        "WHERE n <= :most ORDER BY n"
    )
    types = [Text(), BigInteger(), Integer(), Numeric(10, 2), Boolean(), Integer()]
    names = ["t", "big", "absent", "price", "flag", "n"]
    by_row = DriverRead(sql, types, lambda *values: values)
    at_once = DriverRead(sql, types, lambda *values: values, names=names)
    params = {"text": _AWKWARD_TEXT, "price": "3.50", "most": 2}

    sent: list[str] = []

    def read(db: Session) -> tuple[Any, ...]:
        driver = db.connection().connection.dbapi_connection
        if isinstance(driver, sqlite3.Connection):
            driver.set_trace_callback(sent.append)
        try:
            return (
                by_row.all(db, params), at_once.all(db, params),
                at_once.all(db, {**params, "most": 0}),
            )  # fmt: skip
        finally:
            if isinstance(driver, sqlite3.Connection):
                driver.set_trace_callback(None)

    rows, json_rows, none = await store.unit(read)
    if store.dialect == "sqlite":
        assert ["json_group_array" in sql for sql in sent] == [False, True, True]
    assert (
        json_rows
        == rows
        == [
            ("plain", -5, None, None, False, 1),
            (_AWKWARD_TEXT, 9007199254740993, None, Decimal("3.50"), True, 2),
        ]
    )
    assert [type(v) for v in json_rows[1]] == [type(v) for v in rows[1]]
    assert none == []


def test_a_read_in_one_step_names_each_column_once_and_refuses_inexact_types() -> None:
    make = lambda *values: values  # noqa: E731
    with pytest.raises(ValueError, match="one unique name"):
        DriverRead("SELECT 1 AS a, 2 AS b", [Integer(), Integer()], make, names=["a", "a"])
    with pytest.raises(ValueError, match="one unique name"):
        DriverRead("SELECT 1 AS a, 2 AS b", [Integer(), Integer()], make, names=["a"])
    # SQLite's JSON writes a REAL with 15 significant digits: a float would come back rounded.
    with pytest.raises(ValueError, match="JSON cannot carry"):
        DriverRead("SELECT 0.1 + 0.2 AS f", [Float()], make, names=["f"])


async def test_a_read_declaring_too_few_columns_fails(store: Store) -> None:
    read = DriverRead("SELECT 1, 2", [Integer()], lambda *values: values)
    with pytest.raises(ValueError, match="2 columns read, 1 declared"):
        await store.unit(lambda db: read.all(db, {}))


async def test_the_dashboards_candidates_are_the_orms(store: Store) -> None:
    """The pinned, newest and newest-trusted analyses, read in one statement, are what the
    ORM finds one by one; a pin another workspace made on this one's analysis shows in
    neither workspace."""
    _, mine = await _monitor(store)
    _, other = await _monitor(store)
    now = store.clock()
    floor = analysis_views.DepthFloor(min_days=7.0, min_sales=30)

    def seed(db: Session) -> None:
        # (minutes ago, days of history, sales): the newest is below the floor, the one
        # before it clears it, an older one too; one of a tie on the time, by id.
        for n, (minutes, days, sales) in enumerate(
            [(1, 2.0, 5), (5, 7.0, 30), (5, 9.5, 80), (30, 20.0, None), (60, 30.0, 200)]
        ):
            db.add(Analysis(
                id=f"ana_{n}_{mine[-6:]}", workspace_id=mine, run_id=None, source="import",
                source_url=None, created_at=now - timedelta(minutes=minutes), result="{}",
                source_label=f"import {n}", window_days=days, sales=sales,
            ))  # fmt: skip
        db.flush()
        db.add(DashboardPin(workspace_id=other, analysis_id=f"ana_4_{mine[-6:]}", pinned_at=now))

    await store.unit(seed)

    def both(db: Session, workspace_id: str) -> tuple[Any, ...]:
        view = analysis_views.dashboard_view(
            db, workspace_id, analysis_id=None, floor=floor, recent_runs=0
        )
        newest = (
            select(Analysis)
            .where(Analysis.workspace_id == workspace_id)
            .order_by(Analysis.created_at.desc(), Analysis.id.desc())
        )
        deep = newest.where(
            Analysis.window_days >= floor.min_days, Analysis.sales >= floor.min_sales
        )
        pinned = newest.join(DashboardPin, DashboardPin.analysis_id == Analysis.id).where(
            DashboardPin.workspace_id == workspace_id
        )
        expected = [db.scalars(q.limit(1)).first() for q in (pinned, newest, deep)]
        origins = [
            None if a is None else analysis_views.AnalysisOrigin(
                replace(analysis_record(a), result_json=""), None, None
            )
            for a in expected
        ]  # fmt: skip
        return (view.pinned, view.latest, view.trusted), tuple(origins)

    got, expected = await store.unit(lambda db: both(db, mine))
    assert got == expected
    pinned, latest, trusted = got
    assert pinned is None and latest is not None and trusted is not None
    assert (latest.analysis.source_label, trusted.analysis.source_label) == ("import 0", "import 2")
    assert await store.unit(lambda db: both(db, other)) == ((None, None, None), (None, None, None))


def test_a_state_that_is_no_listing_state_is_refused() -> None:
    """States name the counters' columns in the SQL: only the four known ones get there."""
    with pytest.raises(ValueError, match="unknown listing states"):
        listing_pages.page_key("mon_x", ("open", "open_count FROM monitors --"))
    assert listing_pages.page_key("mon_x", ("sold", "open")) == ("mon_x", ("open", "sold"))


@pytest.mark.postgres
async def test_a_dead_connection_fails_one_read_then_every_unit_has_a_fresh_one(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver's own cursor does what SQLAlchemy's would when the server ends its
    connections (a restart): the read that finds out fails as an outage
    (`DatabaseUnavailable`), and no unit after it is handed another dead connection."""
    monkeypatch.setattr(unit_module, "IDLE_PING_SECONDS", 3600.0)  # no check at checkout
    async with open_store(postgres_url) as store:
        monitor_id, workspace_id = await _monitor(store)
        both_in = trio.Event()
        arrived = 0

        async def read_beside_another() -> None:
            def work(db: Session) -> None:
                db.connection()
                trio.from_thread.run_sync(arrive)
                trio.from_thread.run(both_in.wait)

            await store.unit(work)

        def arrive() -> None:
            nonlocal arrived
            arrived += 1
            if arrived == 2:
                both_in.set()

        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:  # two connections in the pool
                nursery.start_soon(read_beside_another)
                nursery.start_soon(read_beside_another)
        assert _terminate_pool(postgres_url) >= 2

        with pytest.raises(DatabaseUnavailable) as raised:
            await store.runs.get("run_none", workspace_id)
        cause = raised.value.__cause__
        assert isinstance(cause, DBAPIError) and cause.connection_invalidated
        assert cause.statement is not None and "FROM runs" in cause.statement  # the read's
        for _ in range(3):  # the other pooled connection was dropped too
            assert await store.runs.get("run_none", workspace_id) is None
            page = await store.monitors.listings(monitor_id, None, 1, 10, workspace_id=workspace_id)
            assert page is not None


async def test_a_driver_error_is_sqlalchemys(store: Store) -> None:
    """As through SQLAlchemy's own cursor: PostgreSQL's missing table is a programming error
    (a bug, raised as it is); SQLite reports it as an operational error, which a unit takes
    for the database being unavailable, as it did before the driver reads."""
    read = DriverRead("SELECT * FROM no_such_table", [Integer()], lambda *values: values)
    if store.dialect == "postgresql":
        with pytest.raises(ProgrammingError) as raised:
            await store.unit(lambda db: read.all(db, {}))
        assert isinstance(raised.value.orig, psycopg.errors.UndefinedTable)
    else:
        with pytest.raises(DatabaseUnavailable) as unavailable:
            await store.unit(lambda db: read.all(db, {}))
        assert isinstance(unavailable.value.__cause__, OperationalError)
        assert isinstance(unavailable.value.__cause__.orig, sqlite3.OperationalError)
