"""Bodies of `/health` and `/api/status`."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from api.http.schemas import Strict


class HealthResponse(BaseModel):
    status: str
    database: str


class StatusResponse(BaseModel):
    service: str
    version: str
    interface_version: str
    git_revision: str | None
    node_id: str
    started_at: datetime
    uptime_seconds: float
    database: str


class SetMarketSession(Strict):
    cookie: str = Field(
        min_length=1,
        max_length=8192,
        description="The site's cookies, `name=value; name=value`, with `access_token_web`.",
    )
    user_agent: str | None = Field(
        default=None,
        max_length=512,
        description="The User-Agent of the browser the cookies came from (clearance cookies "
        "are bound to it).",
    )


class MarketSessionSet(BaseModel):
    """The session as the service now uses it; the cookies are never shown back."""

    site: str
    source: str
    expires_at: datetime | None
    challenge: str
