"""Which analysis the dashboard shows: `/dashboard` and `GET /api/dashboard` share it.

The analysis the workspace pinned, when it pinned one; else the most recent analysis whose
evidence clears the trust floor (`engine.analysis.TRUST_FLOOR`); else the most recent one,
with a caveat saying what it lacks. Why not simply the latest: one "Analyse this monitor" on
a monitor started minutes ago replaced a month of evidence by a few hours' guesses, and the
page gave no sign of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from api.http.errors import NotFound
from api.naming import analysis_title
from engine.analysis import TRUST_FLOOR, EvidenceDepth, TrustFloor
from store import AnalysisOrigin, AnalysisRecord, DashboardView, DepthFloor, RunRecord, Store

ChosenBy = Literal["pinned", "trusted", "latest", "asked"]


@dataclass(frozen=True, slots=True)
class DashboardChoice:
    """The analysis shown (`origin`, None when the workspace has none), why (`chosen_by`:
    `asked` is an API caller's `run_id`), what it rests on, and `newer`: the most recent
    analysis when it was passed over for being below the floor."""

    origin: AnalysisOrigin | None
    chosen_by: ChosenBy | None
    floor: TrustFloor = TRUST_FLOOR
    newer: AnalysisOrigin | None = None

    @property
    def depth(self) -> EvidenceDepth | None:
        return None if self.origin is None else depth_of(self.origin.analysis)

    @property
    def trusted(self) -> bool:
        depth = self.depth
        return depth is not None and self.floor.cleared_by(depth)

    @property
    def caveat(self) -> str | None:
        """What the analysis shown lacks, in a sentence; None when it clears the floor."""
        depth = self.depth
        if depth is None or self.floor.cleared_by(depth):
            return None
        return below_floor(depth, self.floor)

    @property
    def title(self) -> str | None:
        return None if self.origin is None else title_of(self.origin)


def below_floor(depth: EvidenceDepth, floor: TrustFloor = TRUST_FLOOR) -> str:
    """Why an analysis is below the floor, with what it rests on."""
    return (
        f"Below the trust floor ({floor.words}): this analysis rests on {rests_on(depth)}, "
        "so its ranking can change completely as evidence comes in."
    )


def rests_on(depth: EvidenceDepth) -> str:
    """`0.2 days of history and 3 sales`."""
    days = f"{depth.days:.1f} day{'' if round(depth.days, 1) == 1 else 's'} of history"
    return f"{days} and {depth.sales:,} sale{'' if depth.sales == 1 else 's'}"


def depth_of(analysis: AnalysisRecord) -> EvidenceDepth:
    """What a stored analysis rests on; an unknown figure reads as none."""
    return EvidenceDepth(days=analysis.window_days or 0.0, sales=analysis.sales or 0)


def title_of(origin: AnalysisOrigin) -> str:
    return analysis_title(origin.analysis, origin.run, origin.monitor)


def choose(view: DashboardView, floor: TrustFloor = TRUST_FLOOR) -> DashboardChoice:
    """The choice among `view`'s candidates (pure: the rule in the module's docstring)."""
    if view.origin is not None:
        return DashboardChoice(view.origin, "asked", floor)
    if view.pinned is not None:
        return DashboardChoice(view.pinned, "pinned", floor)
    if view.trusted is not None:
        latest = view.latest
        passed_over = latest is not None and latest.analysis.id != view.trusted.analysis.id
        return DashboardChoice(view.trusted, "trusted", floor, latest if passed_over else None)
    if view.latest is not None:
        return DashboardChoice(view.latest, "latest", floor)
    return DashboardChoice(None, None, floor)


async def dashboard_choice(
    store: Store,
    workspace_id: str,
    *,
    analysis_id: str | None = None,
    by_default: bool = True,
    recent_runs: int = 0,
) -> tuple[DashboardChoice, list[RunRecord]]:
    """The dashboard's analysis: `analysis_id`'s when given (a caller asked for it), else,
    `by_default`, the rule's; and the `recent_runs` newest runs, in one unit of work. No
    document is read."""
    floor = DepthFloor(TRUST_FLOOR.min_days, TRUST_FLOOR.min_sales)
    view = await store.runs.dashboard(
        workspace_id,
        analysis_id=analysis_id,
        floor=floor if by_default and analysis_id is None else None,
        recent_runs=recent_runs,
    )
    return choose(view), view.recent_runs


def choice_fields(choice: DashboardChoice) -> dict[str, Any]:
    """What the API says about the choice, beside the analysis' own fields."""
    depth = choice.depth
    return {
        "chosen_by": choice.chosen_by,
        "evidence_depth": None if depth is None else {"days": depth.days, "sales": depth.sales},
        "trust_floor": {
            "min_days": choice.floor.min_days,
            "min_sales": choice.floor.min_sales,
            "cleared": choice.trusted,
            "text": choice.floor.words,
        },
        "caveat": choice.caveat,
    }


async def pin_in(store: Store, workspace_id: str, analysis_id: str) -> None:
    """Pin the analysis to the workspace's dashboard; `NotFound` for none in the workspace."""
    if not await store.runs.pin(workspace_id, analysis_id):
        raise NotFound("analysis")


async def unpin_in(store: Store, workspace_id: str) -> None:
    """Back to the analysis the trust floor picks (nothing happens when none was pinned)."""
    await store.runs.unpin(workspace_id)
