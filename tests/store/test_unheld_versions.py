"""Versions of a listing's description that no monitor holds are dropped (a monitor deleted, a
poll moving on to a newer version), and only those; on PostgreSQL a drop never takes a
version a poll is taking up at the same moment (`store/market/site_listings.py`)."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy import create_engine, pool, text
from sqlalchemy.orm import Session

from store import Store, open_store
from store._db.migrate import alembic_config, upgrade
from store._db.urls import sync_database_url
from store.market import site_listings
from store.monitors import queries
from tests.conftest import new_monitor
from tests.store.test_price_book_migration import three_monitors
from tests.store.test_site_listings import FR, _poll, _rows, _seen, _shown
from tests.store.test_site_listings_migration import OLD_LISTINGS, _listing

VERSIONS = "SELECT item_id, title FROM site_listings ORDER BY item_id, title"


async def test_a_deleted_monitor_takes_the_versions_only_it_held(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queries, "DELETE_CHUNK", 2)  # several chunks for five listings
    gone = await new_monitor(store, url=FR + "?brand_ids[]=10")
    kept = await new_monitor(store, url=FR + "?search_text=levis")
    await _poll(store, kept.id, [_seen(1, "Jeans 501"), _seen(2, "Jacket")], 0)
    mine = [_seen(1, "Jeans 501"), _seen(2, "Jacket (renamed)"), _seen(3, "Shirt")]
    await _poll(store, gone.id, [*mine, _seen(4, "Belt"), _seen(5, "Cap")], 1)
    assert len(await _rows(store, VERSIONS)) == 6
    assert await store.monitors.delete(gone.id, gone.workspace_id)
    # Item 1's one version and item 2's first stay (the other monitor holds them); the rest,
    # held by the deleted monitor alone, go.
    assert await _rows(store, VERSIONS) == [(1, "Jeans 501"), (2, "Jacket")]
    assert [x[0] for x in (await _shown(store, kept.id)).values()] == ["Jeans 501", "Jacket"]
    assert await _rows(store, "SELECT count(*) FROM monitor_listings") == [(2,)]


async def test_a_poll_drops_the_version_it_moved_on_from_when_no_one_holds_it(
    store: Store,
) -> None:
    alone = await new_monitor(store, url=FR + "?brand_ids[]=10")
    other = await new_monitor(store, url=FR + "?search_text=levis")
    await _poll(store, alone.id, [_seen(1, "Jeans"), _seen(2, "Jacket")], 0)
    await _poll(store, other.id, [_seen(2, "Jacket")], 1)
    await _poll(store, alone.id, [_seen(1, "Jeans 501"), _seen(2, "Jacket, navy")], 2)
    # Item 1's old version was the renaming monitor's alone; item 2's is the other's still.
    assert await _rows(store, VERSIONS) == [
        (1, "Jeans 501"), (2, "Jacket"), (2, "Jacket, navy"),
    ]  # fmt: skip
    assert (await _shown(store, other.id))[2][0] == "Jacket"
    assert (await _shown(store, alone.id))[1][0] == "Jeans 501"


def _version_of(db: Session, item_id: int) -> int:
    return int(
        db.execute(text(f"SELECT id FROM site_listings WHERE item_id = {item_id}")).scalar_one()
    )


@pytest.mark.postgres
async def test_a_drop_skips_a_version_a_poll_is_taking_up(postgres_url: str) -> None:
    """A poll found the version there (its insert did nothing) and read it back: the drop in
    another transaction leaves it, without waiting for the poll (the lock is skipped)."""
    other = create_engine(sync_database_url(postgres_url), poolclass=pool.NullPool)
    async with open_store(postgres_url) as store:
        monitor = await new_monitor(store, url=FR)
        await _poll(store, monitor.id, [_seen(1, "Jeans")], 0)
        # A version no monitor holds, left as it is (no drop ran).
        await store.unit(lambda db: db.execute(text("DELETE FROM monitor_listings")))

        def take_up_and_drop_beside(db: Session) -> tuple[dict[int, int], list[Any]]:
            there = site_listings._versions_by_id(db, [_version_of(db, 1)])
            (version,) = there.values()  # as the poll that stored it described it
            ids = site_listings._version_ids(db, "https://www.vinted.fr", {1: version})
            assert ids[1] in there  # found there, not made
            with Session(other) as beside:
                beside.execute(text("SET lock_timeout = '20s'"))  # never hangs the test
                site_listings.drop_unheld(beside, [ids[1]])
                beside.commit()
                left = beside.execute(text("SELECT id FROM site_listings")).all()
            return ids, [row[0] for row in left]

        ids, left = await store.unit(take_up_and_drop_beside)
        assert ids[1] in left  # skipped while the poll held it
        # Once the poll's transaction is over (nothing held it in the end), it goes.
        await store.unit(lambda db: site_listings.drop_unheld(db, [ids[1]]))
        assert await _rows(store, "SELECT item_id FROM site_listings") == []
    other.dispose()


@pytest.mark.postgres
async def test_a_version_dropped_between_a_polls_insert_and_read_is_made_again(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = create_engine(sync_database_url(postgres_url), poolclass=pool.NullPool)
    real_insert = site_listings._insert_new
    dropped: list[int] = []

    def insert_then_drop_beside(db: Session, *args: Any) -> None:
        real_insert(db, *args)  # the version was there: nothing inserted, nothing locked
        if not dropped:
            with Session(other) as beside:
                dropped.append(_version_of(beside, 1))
                site_listings.drop_unheld(beside, dropped)
                beside.commit()

    async with open_store(postgres_url) as store:
        monitor = await new_monitor(store, url=FR)
        await _poll(store, monitor.id, [_seen(1, "Jeans")], 0)
        await store.unit(lambda db: db.execute(text("DELETE FROM monitor_listings")))
        monkeypatch.setattr(site_listings, "_insert_new", insert_then_drop_beside)
        fresh = await new_monitor(store, url=FR + "?order=newest_first")
        await _poll(store, fresh.id, [_seen(1, "Jeans")], 1)
        assert (await _shown(store, fresh.id))[1][0] == "Jeans"
        made_again = await store.unit(lambda db: _version_of(db, 1))
        assert dropped and made_again != dropped[0]
    other.dispose()


def test_the_migration_drops_the_versions_no_monitor_held(empty_database: str) -> None:
    """Migration v001 on a database made by the release before it: the versions left by
    monitors deleted then go, every version a monitor holds stays, and back down."""
    upgrade(empty_database, "w001")
    upgrade(empty_database, "p001")
    engine = sa.create_engine(sync_database_url(empty_database), poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as db:
            three_monitors(db)
            db.execute(sa.insert(OLD_LISTINGS), [_listing("mon_a", 1, "Jeans", 1)])
        upgrade(empty_database, "l001")
        with engine.begin() as db:  # as a monitor deleted by that release left it
            db.execute(
                text("INSERT INTO site_listings (site, item_id, digest) VALUES ('s', 9, 'd')")
            )
        upgrade(empty_database, "v001")
        with engine.connect() as db:
            left = db.execute(text("SELECT item_id, title FROM site_listings")).all()
        command.downgrade(alembic_config(empty_database), "l001")
        upgrade(empty_database)
    finally:
        engine.dispose()
    assert [tuple(r) for r in left] == [(1, "Jeans")]
