"""Importing a monitor export as a new analysis, at a cost that follows the file, not its
sender's wishes.

Before, an import read the whole body into memory, parsed it into Python objects (about 8x
its size) and analysed it, as many at a time as anyone sent: three 59 MiB exports at once took
the server to 1.9 GB. Now:

- the body is spooled to a temporary file as it arrives (in memory up to `SPOOL_IN_MEMORY`),
  counted against the route's limit even when chunked;
- it is checked for text no page could show in one streaming byte scan, and read into the
  analysis' columns by a streaming parser (`engine.analysis`, ijson), in a worker thread;
- at most `services.NODE_IMPORTS` imports run at once on a node, and one per workspace (429
  otherwise, before the body is read); an import counts as a run against the plan's daily
  runs.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import IO

import trio
from quart import request

from api.billing.quotas import refused, require_quota
from api.http.errors import ApiError, BadRequest, TooManyRequests
from api.http.limits import refuse_too_large
from api.http.security import new_id
from api.services import ImportSlots
from engine import InvalidExport, analyse_import
from engine.analysis import evidence_depth
from store import AnalysisRecord, NewAnalysis, QuotaFull, Store

SPOOL_IN_MEMORY = 1 << 20
BUSY_RETRY_SECONDS = 5.0
SCAN_CHUNK = 1 << 20


class InvalidExportError(ApiError):
    status, code = 422, "invalid_export"


class LengthRequired(ApiError):
    status, code = 411, "length_required"


@asynccontextmanager
async def import_slot(slots: ImportSlots, workspace_id: str) -> AsyncIterator[None]:
    """Hold one of the node's import `slots` and the workspace's; `TooManyRequests` when
    either is taken (asked before the body is read, so a refusal costs nothing)."""
    if workspace_id in slots.workspaces:
        raise TooManyRequests(
            BUSY_RETRY_SECONDS, "An import of this workspace is running; wait until it ends"
        )
    try:
        slots.node.acquire_nowait()
    except trio.WouldBlock:
        raise TooManyRequests(
            BUSY_RETRY_SECONDS, "The service is importing as much as it can; try again shortly"
        ) from None
    slots.workspaces.add(workspace_id)
    try:
        yield
    finally:
        slots.workspaces.discard(workspace_id)
        slots.node.release()


async def require_import_quota(store: Store, workspace_id: str) -> int:
    """An import is an analysis like a run's: the plan must allow creating, and it counts
    against the plan's runs per day (`plan_required`/`quota_exceeded`). Returns the runs a
    day, which the write checks again with its insert: runs started meanwhile count too."""
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    done_today = await store.runs.count_since(workspace_id, today)
    limits = await require_quota(workspace_id, "runs_per_day", done_today, store=store)
    return limits.runs_per_day


async def spool_json_body() -> IO[bytes]:
    """The request body in a temporary file (rewound), counted against the route's limit
    as it arrives; the caller closes it."""
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115
    try:
        size = 0
        async for chunk in request.body:
            size += len(chunk)
            refuse_too_large(size)  # a chunked body has no declared length to refuse early
            await trio.to_thread.run_sync(spool.write, chunk)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool


async def uploaded_file(field_name: str = "file") -> IO[bytes]:
    """The multipart upload's file, as Quart spooled it (to disk past 500 KB); rewound."""
    if request.content_length is None:
        # Quart bounds a multipart body only by what it buffers, which streaming keeps small:
        # without a declared length (refused early when too large) there would be no bound.
        raise LengthRequired(
            "Send the upload with a Content-Length", suggest=["Browsers and curl -F do"]
        )
    upload = (await request.files).get(field_name)
    if upload is None:
        raise BadRequest("Attach the export as the form field `file`", code="missing_file")
    stream: IO[bytes] = upload.stream
    stream.seek(0)
    return stream


# A JSON escape of text no page can show once stored (a lone surrogate) or no column can hold
# (NUL). `\\+` takes a whole run of backslashes: the escape is real when the run is odd. A high
# surrogate is fine when the next escape is its low half.
_ESCAPE = re.compile(rb"(\\+)u([0-9a-fA-F]{4})(?:\\u([0-9a-fA-F]{4}))?")


def unstorable_escape(stream: IO[bytes]) -> str | None:
    """Where the export holds an escape of unstorable text (blocking: run in a thread); the
    stream is rewound. Read in chunks that never end inside a run of backslashes or an
    escape, so that the scan needs no state between them."""
    start = stream.tell()
    try:
        while chunk := bytearray(stream.read(SCAN_CHUNK)):
            # The longest escape after its backslashes is 11 bytes (`u` and four digits, then
            # a low surrogate's `\\u` and four): grow the chunk until its end is clear of them.
            while b"\\" in chunk[-12:] and (more := stream.read(64)):
                chunk += more
            if found := _first_unstorable(chunk):
                return found
        return None
    finally:
        stream.seek(start)


def _first_unstorable(chunk: bytearray) -> str | None:
    for match in _ESCAPE.finditer(chunk):
        if len(match.group(1)) % 2 == 0:
            continue  # an escaped backslash followed by the letter u: plain text
        code = int(match.group(2), 16)
        after = None if match.group(3) is None else int(match.group(3), 16)
        if code == 0:
            return "a NUL character (\\u0000)"
        paired = 0xD800 <= code <= 0xDBFF and after is not None and 0xDC00 <= after <= 0xDFFF
        if 0xD800 <= code <= 0xDFFF and not paired:
            return f"a lone surrogate (\\u{code:04x})"
        if after == 0:
            return "a NUL character (\\u0000)"
    return None


async def import_from_request(
    store: Store, slots: ImportSlots, workspace_id: str, *, include_likely_sales: bool | None = None
) -> AnalysisRecord:
    """The import REST and the web page share: a slot, the plan, the body spooled (JSON, or
    the multipart field `file`), analysed and stored in `store`. Reads the request: call it
    from a handler."""
    async with import_slot(slots, workspace_id):
        runs = await require_import_quota(store, workspace_id)
        if request.mimetype == "multipart/form-data":
            export = await uploaded_file()
        else:
            export = await spool_json_body()
        with export:
            return await import_export_in(
                store, workspace_id, export, include_likely_sales=include_likely_sales, at_most=runs
            )


async def import_export_in(
    store: Store,
    workspace_id: str,
    export: IO[bytes],
    *,
    include_likely_sales: bool | None = None,
    at_most: int | None = None,
) -> AnalysisRecord:
    """Analyse a monitor export (`export`, a binary file at its start) into a new analysis
    of `workspace_id` in `store`; which sales rank is `include_likely_sales` (None: the
    evidence decides, `engine.analysis.choose_sales_basis`).

    `InvalidExportError` (422) for anything that is not a usable export; nothing is stored.
    With `at_most` (the plan's runs a day), `quota_exceeded` when runs and imports took the
    day's last one while this was read, counted with the insert (`store/accounts/quotas.py`).
    """
    problem = await trio.to_thread.run_sync(unstorable_escape, export)
    if problem is not None:
        raise InvalidExportError(f"The export holds text that cannot be stored: {problem}")
    try:
        result, monitor = await trio.to_thread.run_sync(
            analyse_import, export, include_likely_sales
        )
    except InvalidExport as err:
        raise InvalidExportError(f"This is not a usable monitor export: {err}") from err
    depth = evidence_depth(result)  # kept beside it: the dashboard picks on it
    try:
        return await store.runs.add_analysis(
            NewAnalysis(
                analysis_id=new_id("an"),
                workspace_id=workspace_id,
                run_id=None,
                source="import",
                source_url=monitor.url,
                result_json=json.dumps(result),
                source_label=monitor.label,  # its name (`naming`)
                window_days=depth.days,
                sales=depth.sales,
            ),
            at_most=at_most,
        )
    except QuotaFull as full:
        raise await refused(workspace_id, full, store=store) from full
