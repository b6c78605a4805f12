"""The column classes check what they hold: one row per entry, each array in its declared
dtype and read-only, and a column declared in a form the checks do not know is refused."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from engine.analysis import EventColumns
from engine.analysis._columns import I8, B, _Columns


def _events(n: int, *, kind_rows: int | None = None) -> EventColumns:
    return EventColumns(
        item_id=np.arange(n),
        kind=np.zeros(n if kind_rows is None else kind_rows, np.int8),
        from_state=np.zeros(n, np.int8),
        to_state=np.zeros(n, np.int8),
        price=np.zeros(n),
        at=np.zeros(n),
    )


def test_columns_are_converted_to_their_dtype_and_frozen() -> None:
    events = EventColumns(
        item_id=[1, 2],  # type: ignore[arg-type]  # lists are accepted and converted
        kind=[0, 1],  # type: ignore[arg-type]
        from_state=[-1, 0],  # type: ignore[arg-type]
        to_state=[0, 2],  # type: ignore[arg-type]
        price=[10, 12.5],  # type: ignore[arg-type]
        at=[0, 1],  # type: ignore[arg-type]
    )
    assert events.item_id.dtype == np.int64 and events.kind.dtype == np.int8
    assert events.price.dtype == np.float64
    assert events.likely is not None and events.likely.dtype == np.bool_
    assert not events.likely.any()
    for array in (events.item_id, events.kind, events.price, events.likely):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0


def test_a_column_of_another_length_is_refused() -> None:
    assert len(_events(3)) == 3
    with pytest.raises(ValueError, match=r"event column kind has shape \(2,\), want \(3,\)"):
        _events(3, kind_rows=2)


def test_a_column_declared_in_an_unknown_form_is_refused() -> None:
    @dataclass(frozen=True, eq=False)
    class Odd(_Columns):
        WHAT = "odd"
        item_id: I8
        other: np.ndarray  # type: ignore[type-arg]  # not one of the declared column types
        likely: B | None = None

    with pytest.raises(TypeError, match=r"Odd\.other: declare a column as one of"):
        Odd(item_id=np.zeros(1, np.int8), other=np.zeros(1))
