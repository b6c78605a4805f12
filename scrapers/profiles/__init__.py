"""Wire profiles: one module per generation of the marketplace's private API.

`PROBE_ORDER` is the order `auto` tries them in (today's first). See `_base.py` for what a
profile is and how to add one when the marketplace moves again.
"""

from __future__ import annotations

from ._base import Call, StateSource, WireProfile
from .legacy import LegacyProfile
from .sept2026 import Sept2026Profile

PROFILES: dict[str, WireProfile] = {"2026-09": Sept2026Profile(), "legacy": LegacyProfile()}
PROBE_ORDER: tuple[str, ...] = ("2026-09", "legacy")
PROFILE_MODES: tuple[str, ...] = ("auto", *PROBE_ORDER)

__all__ = [
    "PROBE_ORDER",
    "PROFILES",
    "PROFILE_MODES",
    "Call",
    "LegacyProfile",
    "Sept2026Profile",
    "StateSource",
    "WireProfile",
]
