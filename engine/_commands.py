"""The commands actors understand: frozen values, dispatched by type, the same on every node.

A command for a monitor or a run that another node holds travels there serialised
(`engine/cluster/_codec.py`); how a command reaches an actor in this process is
`engine/monitors/_commands.py`'s `Envelope`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PollNow:
    pass


@dataclass(frozen=True, slots=True)
class Pause:
    """Write `paused` (the actor is the only writer of its monitor's status) and stop polling."""


@dataclass(frozen=True, slots=True)
class Resume:
    """Write `active`, clearing the error count, and poll at once (also out of `error`)."""


@dataclass(frozen=True, slots=True)
class Stop:
    pass


# A monitor's commands.
Command = PollNow | Pause | Resume | Stop


@dataclass(frozen=True, slots=True)
class Cancel:
    """End the run `cancelled`. Runs here are cancelled through their cancel scope: `Cancel`
    exists for the run another node holds (it travels there serialised)."""
