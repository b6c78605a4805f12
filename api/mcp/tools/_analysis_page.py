"""What `get_analysis` answers of an analysis: a page of its niches, with the fields asked for,
and a page of its alerts, cut to fit an agent's context window.

The stored document holds up to 200 niches of about 2 KB each and every alert (the demo's sample
month: 465 KB as one JSON text); the REST route answers it whole. The tool answers `limit`
niches from `offset` (best first) and `alerts_limit` alerts from `alerts_offset`, the niches
with their `fields` only (`rank` and `niche`, what and where, always), and says how many there
are and how to ask for the rest (`next`, `next_arguments`). When what was asked would still
pass the tool's budget, alerts come first (they are few), then as many niches as fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from api.analyses.schemas import AnalysisOut
from api.mcp._registry import MAX_ANSWER_BYTES, ToolError, answer_bytes, answer_text

# Every field of a niche, as the analysis writes them (engine `NicheStats.to_json`).
NICHE_FIELDS: tuple[str, ...] = (
    "rank", "niche", "support", "supply", "sold", "reserved", "deleted", "sell_through_base",
    "supply_previous", "sell_through", "sell_through_low", "sell_through_high",
    "sell_through_recent", "sell_through_previous", "ask_price", "sold_price",
    "km_median_days", "km_curve", "demand_velocity", "favourites", "listing_days", "trend",
    "hot", "score", "score_kind", "sold_confirmed", "sold_likely", "km_median_low",
    "km_median_high", "days_note", "score_parts", "hot_reason", "listed_price",
)  # fmt: skip
ALWAYS = ("rank", "niche")
# Opt-in (name them in `fields`): the survival curve (up to 200 steps of three series) and the
# score's workings (raw and shrunk figures, the parent's, the sentence).
HEAVY = ("km_curve", "score_parts")
DEFAULT_FIELDS = tuple(f for f in NICHE_FIELDS if f not in HEAVY)
# What the page's own fields (counts, the `next` sentence and arguments) may take.
PAGE_ROOM = 4096
BUDGET = MAX_ANSWER_BYTES - PAGE_ROOM


@dataclass(frozen=True, slots=True)
class Window:
    """What a call asks for: `limit` niches from `offset`, `alerts_limit` alerts from
    `alerts_offset`."""

    offset: int
    limit: int
    alerts_offset: int
    alerts_limit: int


class AnalysisPage(AnalysisOut):
    """An analysis with a page of its niches and alerts (`result.niches`, `result.alerts`)."""

    niches_total: int = Field(description="Niches in the analysis (best first).")
    offset: int = Field(description="The rank - 1 of the first niche in `result.niches`.")
    fields: list[str] = Field(description="The fields each niche in `result.niches` has.")
    alerts_total: int = Field(description="Alerts in the analysis.")
    alerts_offset: int = Field(description="Alerts skipped before `result.alerts`.")
    truncated: bool = Field(
        description="True when niches or alerts were left out: `next` says how to get them."
    )
    next: str | None = Field(description="How to get what was left out; null: nothing was.")
    next_arguments: dict[str, Any] | None = Field(
        description="The get_analysis arguments that answer what follows; null: nothing does."
    )


def chosen_fields(asked: Sequence[str] | None) -> tuple[str, ...]:
    """The niche fields to answer, in the analysis' order; `ToolError` naming the valid ones
    when `asked` names another."""
    if asked is None:
        return DEFAULT_FIELDS
    unknown = sorted(set(asked) - set(NICHE_FIELDS))
    if unknown:
        raise ToolError(
            f"Unknown niche field(s): {', '.join(unknown)}. Valid fields: "
            f"{', '.join(NICHE_FIELDS)} (rank and niche are always included).",
            code="unknown_field",
        )
    wanted = set(asked) | set(ALWAYS)
    return tuple(f for f in NICHE_FIELDS if f in wanted)


def _size(value: Any) -> int:
    return answer_bytes(answer_text(value))


def _fitting(room: int, sizes: list[int]) -> int:
    """How many of the items (their JSON sizes, in order) fit in `room` bytes of a list."""
    used = 0
    for count, size in enumerate(sizes):
        used += size + 1  # and its comma
        if used > room:
            return count
    return len(sizes)


def page_of(full: AnalysisOut, fields: tuple[str, ...], window: Window) -> AnalysisPage:
    """The page of `full` that `window` asks for, each niche with `fields`, cut to fit the
    budget (alerts first, then niches)."""
    niches: list[dict[str, Any]] = full.result.get("niches") or []
    alerts: list[dict[str, Any]] = full.result.get("alerts") or []
    start, stop = window.offset, window.offset + window.limit
    picked = [{f: n[f] for f in fields if f in n} for n in niches[start:stop]]
    shown = alerts[window.alerts_offset : window.alerts_offset + window.alerts_limit]
    others = full.model_dump(mode="json", exclude={"result"})
    others["result"] = {**full.result, "niches": [], "alerts": []}
    room = BUDGET - _size(others)
    shown = shown[: _fitting(room, [_size(a) for a in shown])]
    room -= _size(shown)
    cut = _fitting(room, [_size(n) for n in picked])
    squeezed = cut < len(picked)
    picked = picked[:cut]
    follow = _following(
        (window.offset + len(picked), len(niches)),
        (window.alerts_offset + len(shown), len(alerts), window.alerts_limit > 0),
    )
    arguments = None if follow is None else _next_arguments(full.id, fields, window, follow)
    return AnalysisPage(
        **full.model_dump(exclude={"result"}),
        result={**full.result, "niches": picked, "alerts": shown},
        niches_total=len(niches),
        offset=window.offset,
        fields=list(fields),
        alerts_total=len(alerts),
        alerts_offset=window.alerts_offset,
        truncated=follow is not None,
        next=None if follow is None else _sentence(follow, (len(niches), len(alerts)), squeezed),
        next_arguments=arguments,
    )


def _next_arguments(
    analysis_id: str, fields: tuple[str, ...], window: Window, follow: tuple[int, int]
) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "analysis_id": analysis_id,
        "offset": follow[0],
        "limit": window.limit,
        "alerts_offset": follow[1],
        "alerts_limit": window.alerts_limit,
    }
    if fields != DEFAULT_FIELDS:
        arguments["fields"] = list(fields)
    return arguments


def _following(niches: tuple[int, int], alerts: tuple[int, int, bool]) -> tuple[int, int] | None:
    """Where the next page starts, (offset, alerts_offset), or None when nothing is left.
    A list walked to its end stays at its end; alerts not asked for (`alerts_limit` 0) are
    not left out."""
    (niche_end, niche_total), (alert_end, alert_total, wanted) = niches, alerts
    more_niches = niche_end < niche_total
    more_alerts = wanted and alert_end < alert_total
    if not (more_niches or more_alerts):
        return None
    return min(niche_end, niche_total), min(alert_end, alert_total)


def _sentence(follow: tuple[int, int], totals: tuple[int, int], squeezed: bool) -> str:
    left = []
    if follow[0] < totals[0]:
        left.append(f"niches from rank {follow[0] + 1} of {totals[0]}")
    if follow[1] < totals[1]:
        left.append(f"alerts from {follow[1] + 1} of {totals[1]}")
    said = (
        f"Left out: {' and '.join(left)}. Call get_analysis with `next_arguments` "
        f"(offset={follow[0]}, alerts_offset={follow[1]}) for what follows."
    )
    if squeezed:
        said += (
            f" Fewer niches than `limit` fitted in the {MAX_ANSWER_BYTES // 1024} KB an answer "
            "holds: name fewer `fields` to get more niches per call."
        )
    return said
