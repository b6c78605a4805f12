"""Bodies of `/health` and `/api/status`."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel


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
