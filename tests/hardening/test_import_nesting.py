"""An import costs what it weighs however it nests, and refuses in a few words (#33, items 1, 6).

Before: the streaming reader took ijson's event stream with a path per event, joined from the
whole stack of levels, so memory grew with the square of the depth: 60 KB of arrays nested
30,000 deep under a key the reader skips took the server 2 GB before its 422, 200 KB nested
100,000 deep had it killed at 23 GB. A value nested 1,000 deep in a checked field failed with a
RecursionError while its refusal was written (500), a poll stamped `9999-12-31T23:59:59-23:59`
(the year 10000 in UTC) failed the analysis (500), and a refused 5 MB string came back whole in
the 422. Now the reader counts levels itself and refuses a document nested past `MAX_DEPTH` at
its first value too deep, timestamps must be moments of the years 1 to 9999 in UTC, and a
refusal quotes at most the first 80 characters of a value.
"""

from __future__ import annotations

import io
import json
import time
import tracemalloc
from typing import Any

import httpx
import pytest
import trio

from engine import analyse_import
from engine.analysis import AnalysisInput, InvalidExport
from engine.analysis._errors import QUOTE_LIMIT, quote
from engine.analysis._export_stream import MAX_DEPTH
from tests.analysis.factory import History, export_document
from tests.api.helpers import assert_envelope, signed_in
from tests.conftest import RunningService

IMPORT = "/api/analysis/import-monitoring"
JSON = {"Content-Type": "application/json"}
MB = 1 << 20
# The outcome does not depend on the database.
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
A_POLL = {
    "id": "poll_1",
    "started_at": "2025-03-31T11:00:00+00:00",
    "finished_at": "2025-03-31T11:00:05+00:00",
    "items": 96,
    "new": 1,
    "changed": 2,
}
YEAR_10000 = "9999-12-31T23:59:59-23:59"


def _document() -> dict[str, Any]:
    history = History()
    for i in range(6):
        history.listing(price=f"{12 + i}.00", seen_days_ago=20, sold_days_ago=3.0 + i)
    document = export_document(history)
    document["polls"] = [dict(A_POLL)]
    return document


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


DEEP = "<deep>"


def _with_deep(document: dict[str, Any], depth: int) -> bytes:
    """`document` as JSON with its value `DEEP` replaced by arrays nested `depth` deep (as
    text: Python's own json cannot write or read 1,000 levels)."""
    return json.dumps(document).replace(json.dumps(DEEP), _deep(depth), 1).encode()


def _nested_under_a_skipped_key(depth: int) -> bytes:
    """The attack's shape: a head the reader knows, then arrays nested `depth` deep under a key
    it does not read (about 2 bytes a level)."""
    head = b'{"format": "nichescope.monitor-export", "version": 2, "notes": '
    return head + _deep(depth).encode() + b"}"


# -- the reader, in-process -------------------------------------------------------------------


def test_deep_nesting_is_refused_by_the_reader_in_bounded_memory() -> None:
    # The smaller body first: a reader whose memory grows with the square of the depth fails
    # here at about 2 GB, before the larger one could take the machine's memory.
    for depth in (30_000, 100_000):
        body = _nested_under_a_skipped_key(depth)
        tracemalloc.start()
        try:
            started = time.perf_counter()
            with pytest.raises(InvalidExport) as refused:
                AnalysisInput.from_export(io.BytesIO(body))
            seconds = time.perf_counter() - started
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        kib = len(body) // 1024
        assert peak < 4 * MB, f"{kib} KiB nested {depth:,} deep took {peak / MB:.1f} MB"
        assert seconds < 5, f"{kib} KiB nested {depth:,} deep took {seconds:.1f} s"
        assert refused.value.where == "document['notes']"
        assert refused.value.problem == f"nested more than {MAX_DEPTH} levels deep"


def test_the_depth_limit_is_far_above_an_export_and_exact() -> None:
    """An export nests three levels; a field of the monitor (level 2) may hold a value nested
    up to the limit, and one level more is refused, naming where."""
    document = _document()
    document["monitor"]["extra"] = DEEP
    assert AnalysisInput.from_export(_with_deep(document, MAX_DEPTH - 2)).monitor is not None
    with pytest.raises(InvalidExport) as refused:
        AnalysisInput.from_export(_with_deep(document, MAX_DEPTH - 1))
    assert refused.value.where == "monitor"
    row = _document()
    row["listings"][2]["title"] = DEEP
    with pytest.raises(InvalidExport) as refused:
        AnalysisInput.from_export(_with_deep(row, 1000))
    assert refused.value.where == "listings[2]"


@pytest.mark.parametrize(
    ("where", "stamp"),
    [
        ("polls[0].started_at", YEAR_10000),
        ("polls[0].market_at", YEAR_10000),
        ("exported_at", YEAR_10000),
        ("listings[0].first_seen_at", "9999-12-31T23:59:59.999999"),  # rounds into 10000
        ("polls[0].started_at", "0001-01-01T00:00:00+23:59"),  # the year 0 in UTC
    ],
)
def test_a_timestamp_out_of_range_is_refused_naming_its_field(where: str, stamp: str) -> None:
    document = _document()
    *path, field = where.replace("[0]", ".0").split(".")
    target: Any = document
    for step in path:
        target = target[int(step)] if step.isdigit() else target[step]
    target[field] = stamp
    with pytest.raises(InvalidExport) as refused:
        analyse_import(io.BytesIO(json.dumps(document).encode()))
    assert refused.value.where == where
    assert refused.value.problem.startswith("out of range")


@pytest.mark.parametrize("stamp", ["9999-12-31T23:59:59+00:00", "0001-01-01T00:00:00Z"])
def test_the_first_and_last_moments_are_analysed(stamp: str) -> None:
    document = _document()
    document["polls"][0]["finished_at"] = stamp
    document["listings"][0]["listed_at"] = stamp
    result, _ = analyse_import(io.BytesIO(json.dumps(document).encode()))
    json.dumps(result)


def test_a_refusal_quotes_a_short_prefix_and_never_recurses() -> None:
    document = _document()
    document["listings"][1]["price"] = "9" * (5 * MB)
    with pytest.raises(InvalidExport) as refused:
        AnalysisInput.from_export(json.dumps(document).encode())
    assert refused.value.where == "listings[1].price"
    assert len(refused.value.problem) < 40 + QUOTE_LIMIT
    assert f"'{'9' * 20}" in refused.value.problem
    # However deep a value (the reader stops at `MAX_DEPTH`; the quote does not rely on it).
    deep: list[Any] = []
    inner = deep
    for _ in range(100_000):
        inner.append([])
        inner = inner[0]
    assert quote(deep) == "[[[[...]]]]"
    assert len(quote({"k" * 500: ["v" * 500] * 50})) <= QUOTE_LIMIT


# -- over the API -----------------------------------------------------------------------------


async def _post(client: httpx.AsyncClient, body: bytes) -> httpx.Response:
    with trio.fail_after(30):
        return await client.post(IMPORT, content=body, headers=JSON)


def _refused(response: httpx.Response, where: str) -> str:
    body = assert_envelope(response, 422, "invalid_export")
    message = body["error"]["message"]  # type: ignore[index]
    assert isinstance(message, str) and f" {where}: " in message, message
    assert len(response.content) < 2000, len(response.content)
    return message


@SQLITE_ONLY
async def test_a_deeply_nested_import_is_a_quick_422_and_stored_analyses_stay(
    service: RunningService,
) -> None:
    async with service.client() as client:
        await signed_in(client)
        stored = await _post(client, json.dumps(_document()).encode())
        assert stored.status_code == 201, stored.text
        for depth in (30_000, 100_000):  # about 60 KB and 200 KB
            message = _refused(
                await _post(client, _nested_under_a_skipped_key(depth)), "document['notes']"
            )
            assert f"nested more than {MAX_DEPTH} levels deep" in message
        listed = (await client.get("/api/analyses")).json()
        assert [a["id"] for a in listed["analyses"]] == [stored.json()["id"]]
        assert (await client.get(f"/api/analyses/{stored.json()['id']}")).status_code == 200


@SQLITE_ONLY
async def test_stamps_out_of_range_deep_values_and_huge_strings_are_short_422s(
    service: RunningService,
) -> None:
    year_10000 = _document()
    year_10000["polls"][0]["started_at"] = YEAR_10000
    deep_title = _document()
    deep_title["listings"][3]["title"] = DEEP
    deep_url = _document()
    deep_url["monitor"]["url"] = DEEP
    huge = _document()
    huge["exported_at"] = "2025" + "x" * (5 * MB)
    async with service.client() as client:
        await signed_in(client)
        message = _refused(
            await _post(client, json.dumps(year_10000).encode()), "polls[0].started_at"
        )
        assert YEAR_10000 in message
        _refused(await _post(client, _with_deep(deep_title, 1000)), "listings[3]")
        _refused(await _post(client, _with_deep(deep_url, 1000)), "monitor")
        message = _refused(await _post(client, json.dumps(huge).encode()), "exported_at")
        assert "'2025xxxx" in message and "x" * (QUOTE_LIMIT + 1) not in message
        assert (await client.get("/api/analyses")).json()["total"] == 0
