"""SQLAlchemy table models: the one description of the schema that migrations follow."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, ForeignKey, Index, String, Text, TypeDecorator
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class UtcDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend.

    SQLite stores no offset, so values come back naive; this type puts UTC back on the way
    out so that comparisons behave the same on SQLite and PostgreSQL.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value

    def result_processor(
        self, dialect: Dialect, coltype: Any
    ) -> Callable[[Any], datetime | None] | None:
        """On SQLite, the stored text read in one step (`datetime.fromisoformat`, in C)
        instead of SQLAlchemy's parser and then `process_result_value`: a page of listings
        has 250 datetimes, and the two steps were a fifth of its cost."""
        if dialect.name != "sqlite":
            return super().result_processor(dialect, coltype)

        def parse(value: Any) -> datetime | None:
            if value is None:
                return None
            read = datetime.fromisoformat(value) if isinstance(value, str) else value
            return read if read.tzinfo is not None else read.replace(tzinfo=UTC)

        return parse


class Base(DeclarativeBase):
    pass


class Workspace(Base):
    __tablename__ = "workspaces"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class User(Base):
    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    name: Mapped[str | None] = mapped_column(String(200))
    password_hash: Mapped[str | None] = mapped_column(Text)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    # When its owner proved the address (a link mailed to it, or the identity provider): until
    # then the address names the account for signing in only, never to link an identity or
    # to make an operator (`store/_confirmations.py`).
    email_verified_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class Session(Base):
    """A browser session; only the SHA-256 of the cookie value is kept."""

    __tablename__ = "sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())


class PasswordReset(Base):
    __tablename__ = "password_resets"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class AccessToken(Base):
    """A personal access token; the secret itself is never stored, only its SHA-256."""

    __tablename__ = "access_tokens"
    __table_args__ = (Index("ix_access_tokens_user_id", "user_id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    label: Mapped[str] = mapped_column(String(100))
    scopes: Mapped[str] = mapped_column(String(40))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


from . import _billing_models as _billing_models  # noqa: E402  (registers the tables on Base)
from . import _cluster_models as _cluster_models  # noqa: E402  (registers the tables on Base)
from . import _confirmation_models as _confirmation_models  # noqa: E402  (registers the tables)
from . import _market_models as _market_models  # noqa: E402  (registers the tables on Base)
from . import _monitor_models as _monitor_models  # noqa: E402  (registers the tables on Base)
from . import _notify_models as _notify_models  # noqa: E402  (registers the tables on Base)
from . import _price_book_models as _price_book_models  # noqa: E402  (registers the tables)
from . import _run_models as _run_models  # noqa: E402  (registers the tables on Base)
