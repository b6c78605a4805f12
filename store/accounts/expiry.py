"""Sessions and e-mailed links past their use, deleted by the engine's housekeeping
(`engine/_janitor.py`): nothing reads them any longer, and without it every sign-in and
every mailed link would stay a row for good."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete
from sqlalchemy.orm import Session as Db

from .._db.rows import rows_changed
from ..billing.models import TrialToken
from .confirmation_models import EmailConfirmation
from .models import PasswordReset, Session

# A link opened up to this long after it expired still says "this link has expired" (or
# "already used") rather than "unknown link"; after that it is deleted.
LINK_GRACE = timedelta(days=7)


def delete_expired(db: Db, now: datetime) -> dict[str, int]:
    """Delete expired sessions, and the links (password resets, e-mail confirmations, trial
    links) that expired more than `LINK_GRACE` ago, used or not; how many of each."""
    gone = {"sessions": rows_changed(db.execute(delete(Session).where(Session.expires_at <= now)))}
    links: dict[str, type[PasswordReset] | type[EmailConfirmation] | type[TrialToken]] = {
        "password_resets": PasswordReset,
        "email_confirmations": EmailConfirmation,
        "trial_links": TrialToken,
    }
    long_ago = now - LINK_GRACE
    for name, model in links.items():
        gone[name] = rows_changed(db.execute(delete(model).where(model.expires_at <= long_ago)))
    return gone
