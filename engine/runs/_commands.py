"""Commands for a run. Only one so far: runs are cancelled through their cancel scope here,
so `Cancel` exists for the run another node holds (it travels there serialised)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Cancel:
    """End the run `cancelled`."""
