"""Migration e001 on a database that has accounts and channels already, on both databases:
what counts as proven from what the rows hold, e-mail channels waiting for their recipient,
and hints rewritten to show a host's registered name only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import create_engine, insert, pool, select

from store._db.migrate import upgrade
from store._db.urls import sync_database_url
from store.accounts.models import PasswordReset, User, Workspace
from store.billing.models import TrialToken
from store.notify.models import NotificationChannel

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def _user(name: str, *, password: bool = True) -> dict[str, Any]:
    return {
        "id": f"usr_{name}",
        "email": f"{name}@example.com",
        "name": None,
        "password_hash": "h" if password else None,
        "workspace_id": f"ws_{name}",
        "created_at": T0,
    }


def _channel(name: str, kind: str, hint: str) -> dict[str, Any]:
    return {
        "id": f"chn_{name}", "workspace_id": "ws_plain", "kind": kind, "name": name,
        "hint": hint, "secret_box": "sealed", "enabled": True, "created_at": T0,
    }  # fmt: skip


def test_e001_proves_what_the_rows_prove_and_masks_the_hints(empty_database: str) -> None:
    upgrade(empty_database, "0008")
    upgrade(empty_database, "b001")
    engine = create_engine(sync_database_url(empty_database), poolclass=pool.NullPool)
    names = ("oidc", "reset", "trial", "elsewhere", "plain")
    later = T0 + timedelta(days=3)
    try:
        with engine.begin() as db:
            for name in names:
                db.execute(insert(Workspace).values(id=f"ws_{name}", name=name, created_at=T0))
            db.execute(insert(User), [_user(n, password=n != "oidc") for n in names])
            used = {"created_at": T0, "expires_at": later, "used_at": later}
            reset = insert(PasswordReset).values(token_hash="r" * 64, user_id="usr_reset", **used)
            db.execute(reset)
            for name, email in (("trial", "trial@example.com"), ("elsewhere", "x@example.com")):
                db.execute(
                    insert(TrialToken).values(
                        token_hash=name.ljust(64, "t"),
                        workspace_id=f"ws_{name}",
                        user_id=f"usr_{name}",
                        email=email,
                        **used,
                    )
                )
            db.execute(
                insert(NotificationChannel),
                [
                    _channel("hook", "webhook", "https://abc123.m.pipedream.net/…3f2a"),
                    _channel("plain", "webhook", "https://example.com/"),
                    _channel("mail", "email", "a***@inbound.x9y8.postmarkapp.com"),
                    _channel("bot", "telegram", "bot …Xk2a · chat 12345"),
                ],
            )
        upgrade(empty_database, "e001")
        with engine.begin() as db:
            proven = dict(db.execute(select(User.id, User.email_verified_at)).all())
            channels = {
                row.id: (row.hint, row.confirmed_at)
                for row in db.execute(select(NotificationChannel))
            }
    finally:
        engine.dispose()

    assert proven == {
        "usr_oidc": T0,  # made through the identity provider
        "usr_reset": later,
        "usr_trial": later,
        "usr_elsewhere": None,  # its trial link went to another address
        "usr_plain": None,
    }
    assert channels == {
        "chn_hook": ("https://*.pipedream.net/…3f2a", T0),
        "chn_plain": ("https://example.com/", T0),
        "chn_mail": ("a***@*.postmarkapp.com", None),  # waits for its recipient
        "chn_bot": ("bot …Xk2a · chat 12345", T0),
    }
