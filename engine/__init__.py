"""Engine: supervised actors (monitors, runs) and niche analysis."""

from ._engine import Engine

__all__ = ["Engine"]
