"""Commands between nodes: the same frozen dataclasses as on one node, written as text.

A command for work another node holds is stored in `cluster_commands.command` (see
`store/cluster/queries.py`) as the command type's name, followed, when the type has fields, by one
space and its fields as a JSON object:

    Pause        PollNow        Cancel        Sample {"n":1}

Only the registered types travel (`CODEC`: a monitor's `PollNow`, `Pause`, `Resume`, `Stop`
and a run's `Cancel`). Text naming any other type, fields the type does not declare, missing
or of the wrong type, or anything else malformed raises `CommandRefused`: the receiver logs
it and drops the row, and a bad row never crashes a node.

Fieldless commands are their bare names so that they fit the column as created (16
characters, migration 0005): no schema change. A command with fields would need a wider
column first (tests/engine/test_commands.py checks that every registered type fits).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._commands import Cancel, Pause, PollNow, Resume, Stop

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")

RemoteCommand = PollNow | Pause | Resume | Stop | Cancel


class CommandRefused(ValueError):
    """Text that is not a registered command (with the fields its type declares)."""


class CommandCodec(Generic[T]):
    """Text <-> frozen dataclass, for the registered types only."""

    def __init__(self, registered: Iterable[type[T]]) -> None:
        self.types: Mapping[str, type[T]] = types.MappingProxyType(
            {cls.__name__: cls for cls in registered}
        )

    def encode(self, command: T) -> str:
        name = type(command).__name__
        if self.types.get(name) is not type(command):
            raise TypeError(f"{name} is not a command that travels between nodes")
        values = {f.name: getattr(command, f.name) for f in dataclasses.fields(command)}
        if not values:
            return name
        return f"{name} {json.dumps(values, separators=(',', ':'), sort_keys=True)}"

    def decode(self, text: str) -> T:
        name, space, rest = text.partition(" ")
        cls = self.types.get(name)
        if cls is None:
            raise CommandRefused(f"unknown command type {name[:40]!r}")
        given: object = {}
        if space:
            try:
                given = json.loads(rest)
            except ValueError as err:
                raise CommandRefused(f"{name}: fields are not JSON") from err
        if not isinstance(given, dict):
            raise CommandRefused(f"{name}: fields must be a JSON object")
        declared = {f.name: f for f in dataclasses.fields(cls) if f.init}
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise CommandRefused(f"{name}: unknown fields {unknown}")
        required = {
            field_name
            for field_name, f in declared.items()
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        missing = sorted(required - set(given))
        if missing:
            raise CommandRefused(f"{name}: missing fields {missing}")
        hints = typing.get_type_hints(cls)
        for field_name, value in given.items():
            if not _fits(value, hints[field_name]):
                raise CommandRefused(f"{name}: field {field_name!r} has the wrong type")
        return cls(**given)


def _fits(value: object, hint: Any) -> bool:
    """Whether a JSON value is of the declared type (plain JSON types and unions of them;
    anything richer is refused rather than guessed)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return any(_fits(value, arm) for arm in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint in (int, str):
        return isinstance(value, hint) and not isinstance(value, bool)
    if hint is bool:
        return isinstance(value, bool)
    return False


CODEC: CommandCodec[RemoteCommand] = CommandCodec([PollNow, Pause, Resume, Stop, Cancel])


def encode_command(command: RemoteCommand) -> str:
    return CODEC.encode(command)


def decode_command(text: str) -> RemoteCommand:
    return CODEC.decode(text)
