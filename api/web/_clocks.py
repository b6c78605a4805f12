"""Times on the monitor page, each labelled with its clock.

Two clocks meet there: checks are timed on the service's clock (`last_poll_at`,
`next_poll_at`), while a monitor that reads the marketplace's stated time stamps listings on
the marketplace's (`clock` `market`, see `engine/monitors/_clock.py`). They can be far apart:
the demo's simulated market runs 60 times faster than ours. So check times are said relative
to now ("12 s ago", "in 4 s", which `static/live.js` keeps counting) with the time of day in
UTC beside them, and the marketplace's clock is named wherever it is the one shown.
"""

from __future__ import annotations

from datetime import datetime

from api.web._blueprint import blueprint

IN_STEP_SECONDS = 60  # two clocks closer than this read as one to a person
OVERDUE_SECONDS = 3  # past due by more than this, a check is under way
LATE_SECONDS = 120  # ... and by more than this, late (a check of many pages takes a minute)


def _span(seconds: float) -> str:
    """`12 s`, `3 min`, `2 h`, `4 days`: a duration as a person rounds it."""
    seconds = abs(seconds)
    if seconds < 90:
        return f"{round(seconds)} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    if seconds < 36 * 3600:
        return f"{round(seconds / 3600)} h"
    return f"{round(seconds / 86400)} days"


@blueprint.app_template_filter("ago")
def ago(at: datetime | None, now: datetime) -> str:
    """How long before `now` (the service's clock) `at` was: `just now`, `12 s ago`."""
    if at is None:
        return "Not yet"
    seconds = (now - at).total_seconds()
    return "just now" if seconds < 2 else f"{_span(seconds)} ago"


@blueprint.app_template_filter("due_in")
def due_in(at: datetime | None, now: datetime) -> str:
    """How long after `now` `at` is: `in 4 s`; `due now` as it comes; then, past it, that
    the check is running (an actor starts its check when due, and reading a catalogue and
    its item pages can take a minute) and since when; past two minutes, that it is late (the
    service is busy or down: "checking" would be a guess)."""
    if at is None:
        return "Not scheduled"
    seconds = (at - now).total_seconds()
    if seconds >= 1:
        return f"in {_span(seconds)}"
    if seconds > -OVERDUE_SECONDS:
        return "due now"
    if seconds > -LATE_SECONDS:
        return f"checking now (due {_span(seconds)} ago)"
    return f"late: due {_span(seconds)} ago"


@blueprint.app_template_filter("clock_time")
def clock_time(at: datetime | None) -> str:
    """`27 Nov 2026, 05:11:04 UTC`: to the second, since checks can be seconds apart."""
    return "—" if at is None else at.strftime("%d %b %Y, %H:%M:%S UTC")


def apart(market_at: datetime, ours: datetime) -> str:
    """How the marketplace's clock stood to ours at one check: `7 min ahead of ours`."""
    seconds = (market_at - ours).total_seconds()
    if abs(seconds) < IN_STEP_SECONDS:
        return "in step with ours"
    return f"{_span(seconds)} {'ahead of' if seconds > 0 else 'behind'} ours"
