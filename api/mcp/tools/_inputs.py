"""Input models shared by several tools."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class NoArguments(BaseModel):
    """A tool that takes no arguments (unknown ones are refused, so typos show)."""

    model_config = ConfigDict(extra="forbid", title="NoArguments")
