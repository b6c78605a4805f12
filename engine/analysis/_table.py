"""`NicheTable`: the ranked niches as a read-only sequence of `NicheStats`, built on demand.

An analysis of a million listings has tens of thousands of niches; boxing every one into a
frozen record costs more than the statistics themselves, and most readers look at the top
few. The table keeps the ranked columns and builds (and caches) a `NicheStats` the first
time one is read, so `result.niches[:10]` costs ten records and `to_json()` the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import overload

from ._niche_records import NicheStats


class NicheTable(Sequence[NicheStats]):
    __slots__ = ("_cache", "_make", "_n")

    def __init__(self, n: int, make: Callable[[int], NicheStats]) -> None:
        self._n = n
        self._make = make
        self._cache: dict[int, NicheStats] = {}

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> NicheStats: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[NicheStats, ...]: ...

    def __getitem__(self, index: int | slice) -> NicheStats | tuple[NicheStats, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._n)))
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError("niche rank out of range")
        stats = self._cache.get(index)
        if stats is None:
            # Benign race under threads: two readers may build the same equal record.
            stats = self._cache[index] = self._make(index)
        return stats

    def __iter__(self) -> Iterator[NicheStats]:
        return (self[i] for i in range(self._n))

    def __repr__(self) -> str:
        return f"<NicheTable of {self._n} niches>"


__all__ = ["NicheTable", "Sequence"]
