"""The table of e-mailed confirmation links: one row per link, keyed by the keyed hash of its
secret (the secret itself is only ever in the e-mail), as password resets and trial links are."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from .._db.base import Base, UtcDateTime


class EmailConfirmation(Base):
    """A link that proves `email` belongs to whoever opens it: an account's address
    (`purpose` "account", `user_id` set) or an alert channel's (`purpose` "channel",
    `channel_id` set). Single-use (`used_at`), and dead after `expires_at`."""

    __tablename__ = "email_confirmations"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    purpose: Mapped[str] = mapped_column(String(16))
    email: Mapped[str] = mapped_column(String(320))
    user_id: Mapped[str | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    channel_id: Mapped[str | None] = mapped_column(
        ForeignKey("notification_channels.id", ondelete="CASCADE"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
