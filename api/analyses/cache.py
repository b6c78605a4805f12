"""Stored analyses' documents, parsed once and kept encoded, by id.

An analysis never changes once stored: its ranked niches, alerts and graph specs are the
same on every read. Parsing the stored JSON (hundreds of kilobytes for a big catalogue),
validating it into the answer's model and encoding it again was most of an analysis read's
cost, and the dashboard paid it too for ten niches. Here each document is parsed once and
its parts kept as JSON bytes, spliced into answers as they are.

Whether the analysis still exists in the caller's workspace, and what it is called, are not
cached: every read asks the database (a small row, see `store.AnalysisOrigin`), so a deleted
analysis is a 404 on the next request whatever this cache holds, and another workspace's is
never served. The cache is bounded by the bytes it holds (least recently used out first).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import orjson

from engine.analysis import with_sales_basis

# Bumped when the shape of what is served from here changes, so that old ETags never match.
# 2: every result carries its sales basis (derived for analyses stored before it existed).
BODY_VERSION = "2"


SALES_BASIS_FIELDS = ("sales_basis", "sales_basis_reason", "sales_basis_note")


@dataclass(slots=True)
class AnalysisParts:
    """One analysis document, encoded by part."""

    result: bytes  # the document without its graphs, as the analysis answer's `result`
    top_niches: bytes  # the first niches (a JSON array), for the dashboard
    graphs: dict[str, bytes]  # graph name -> its Vega-Lite spec
    svgs: dict[str, bytes] = field(default_factory=dict)  # rendered on first request
    # Which sales the analysis counts and the sentence saying so (`with_sales_basis`): the
    # dashboard shows it beside the top niches without reading the whole result again.
    sales_basis: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, result_json: str, top: int) -> AnalysisParts:
        try:
            document: dict[str, Any] = orjson.loads(result_json)
        except orjson.JSONDecodeError:
            # Python's encoder wrote a NaN or an infinity (not JSON): its decoder reads them,
            # and orjson writes them back as null, as pydantic did for the answer.
            document = json.loads(result_json)
        # An analysis stored before the sales basis existed is served with one derived.
        document = with_sales_basis(document)
        graphs = document.pop("graphs", None)
        specs = graphs if isinstance(graphs, dict) else {}
        niches = document.get("niches")
        return cls(
            result=orjson.dumps(document),
            top_niches=orjson.dumps(niches[:top] if isinstance(niches, list) else []),
            graphs={
                name: orjson.dumps(spec) for name, spec in specs.items() if isinstance(spec, dict)
            },
            sales_basis={k: v for k, v in document.items() if k in SALES_BASIS_FIELDS},
        )

    @property
    def size(self) -> int:
        return (
            len(self.result)
            + sum(map(len, self.graphs.values()))
            + sum(map(len, self.svgs.values()))
            + len(self.top_niches)
        )


class AnalysisCache:
    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self._max_bytes = max_bytes
        self._held = 0
        self._parts: OrderedDict[str, AnalysisParts] = OrderedDict()
        self._sizes: dict[str, int] = {}

    def get(self, analysis_id: str) -> AnalysisParts | None:
        parts = self._parts.get(analysis_id)
        if parts is not None:
            self._parts.move_to_end(analysis_id)
        return parts

    def put(self, analysis_id: str, parts: AnalysisParts) -> None:
        self.forget(analysis_id)
        self._parts[analysis_id] = parts
        self.resized(analysis_id)

    def resized(self, analysis_id: str) -> None:
        """Recount what `analysis_id` holds (after an SVG was added to it)."""
        parts = self._parts.get(analysis_id)
        if parts is None:
            return
        self._held += parts.size - self._sizes.get(analysis_id, 0)
        self._sizes[analysis_id] = parts.size
        while self._held > self._max_bytes and len(self._parts) > 1:
            oldest, _ = self._parts.popitem(last=False)
            self._held -= self._sizes.pop(oldest)

    def forget(self, analysis_id: str) -> None:
        if self._parts.pop(analysis_id, None) is not None:
            self._held -= self._sizes.pop(analysis_id)

    @property
    def held_bytes(self) -> int:
        return self._held


def etag(*parts: str) -> str:
    """A strong entity tag for a body made of `parts` (ids and whatever in it may change)."""
    digest = hashlib.blake2b("\x1f".join((BODY_VERSION, *parts)).encode(), digest_size=12)
    return f'"{digest.hexdigest()}"'


def matches(if_none_match: str | None, tag: str) -> bool:
    """Whether an If-None-Match header names `tag` (or is `*`); weak forms compare equal,
    as RFC 9110 has it for If-None-Match."""
    if not if_none_match:
        return False
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == tag:
            return True
    return False
