"""`/monitors/<id>/alerts`: what a monitor sends, to which channels, when.

The page edits the monitor's own rule (one; saving replaces the monitor's own rules with it,
as `set_notification_rules` does). Ticking no kind of alert and saving removes the monitor's
own rules: it then follows the workspace's default rules, if any.
"""

from __future__ import annotations

from typing import Any
from zoneinfo import available_timezones

from pydantic import ValidationError
from quart import Response, request

from api.http.auth import Principal
from api.http.errors import ApiError
from api.monitors.actions import owned_monitor
from api.notifications import actions
from api.notifications.schemas import MonitorRule
from api.services import services
from api.web._blueprint import blueprint
from api.web._render import page, see_other
from api.web._words import explain
from api.web.account_pages import signed_in, signed_in_form
from store import RuleRecord

KINDS = (
    ("new_listing", "New listings", "Every new listing that matches the filters below."),
    ("deal", "Deals", "A listing asking well under what its niche sells for (share below)."),
    ("price_drop", "Price drops", "A matching listing whose seller lowered the price."),
    ("sell_through_jump", "Niche heating up", "A niche whose sell-through jumps."),
    ("new_hot_niche", "New hot niche", "A niche that starts selling fast at a good price."),
    ("monitor_error", "Monitor in trouble", "This monitor cannot check its catalogue any more."),
)
LIST_FIELDS = (
    "brands", "sizes", "conditions", "include_keywords", "exclude_keywords", "exclude_sellers"
)  # fmt: skip
FIELD_WORDS = {
    "kinds": "Pick at least one kind of alert.",
    "deal_ratio": "Enter a share between 1 and 100 percent.",
    "price_min": "Enter a price of 0 or more.",
    "price_max": "Enter a price of 0 or more, not below the lowest price.",
    "quiet_start": "Enter both times of the quiet hours as HH:MM, and make them differ.",
    "quiet_end": "Enter both times of the quiet hours as HH:MM, and make them differ.",
    "timezone": "Pick a time zone from the list, such as Europe/Paris.",
    "digest_hour": "Pick an hour between 0 and 23.",
    "name": "Keep the name under 100 characters.",
}
for _field in LIST_FIELDS:
    FIELD_WORDS[_field] = "Separate entries with commas; at most 50, each under 200 characters."
TEXT_FIELDS = (
    "name", "deal_pct", "price_min", "price_max", "business", "min_confidence", "mode",
    "digest_hour", "quiet_start", "quiet_end", "timezone", *LIST_FIELDS,
)  # fmt: skip
ZONES = sorted(available_timezones())
NOTICES = {
    "saved": "Saved. New alerts follow these settings from the next check.",
    "cleared": "This monitor has no rule of its own now; it follows your workspace's defaults.",
}


def _values(rule: RuleRecord | None) -> dict[str, Any]:
    """The form's values for a stored rule (or the defaults for a monitor with none)."""
    if rule is None:
        return {
            "kinds": ["deal"], "deal_pct": "70", "mode": "instant", "digest_hour": "8",
            "timezone": "UTC", "enabled": True, "channel_ids": [], "business": "",
            "min_confidence": "any", "name": "",
        }  # fmt: skip
    f = rule.filters
    values: dict[str, Any] = {
        "name": rule.name,
        "kinds": list(rule.kinds),
        "deal_pct": f"{rule.deal_ratio * 100:g}",
        "price_min": "" if f.price_min is None else f"{float(f.price_min):g}",
        "price_max": "" if f.price_max is None else f"{float(f.price_max):g}",
        "business": "" if f.business is None else ("business" if f.business else "private"),
        "min_confidence": f.min_confidence,
        "channel_ids": list(rule.channel_ids),
        "mode": rule.mode,
        "digest_hour": str(rule.digest_hour),
        "quiet_start": rule.quiet_start or "",
        "quiet_end": rule.quiet_end or "",
        "timezone": rule.timezone,
        "enabled": rule.enabled,
    }
    for name in LIST_FIELDS:
        values[name] = ", ".join(getattr(f, name))
    return values


async def _alerts_page(
    who: Principal, monitor_id: str, *, status: int = 200, **context: Any
) -> Response:
    svc = services()
    monitor = await owned_monitor(svc.store, monitor_id, who.workspace_id)
    own = await actions.list_rules(svc.store, who.workspace_id, monitor.id)
    channels = await actions.list_channels(svc.store, who.workspace_id)
    context.setdefault("form", _values(own[0] if own else None))
    context.setdefault("errors", {})
    return await page(
        "alerts.html",
        status=status,
        monitor=monitor,
        own_rules=own,
        channels=channels,
        kinds=KINDS,
        zones=ZONES,
        notices=NOTICES,
        **context,
    )


@blueprint.get("/monitors/<id:monitor_id>/alerts")
async def monitor_alerts(monitor_id: str) -> Response:
    return await _alerts_page(await signed_in(), monitor_id)


@blueprint.get("/app/monitors/<id:monitor_id>/alerts")
async def monitor_alerts_alias(monitor_id: str) -> Response:
    return see_other(f"/monitors/{monitor_id}/alerts")


def _number(text: str) -> float | str | None:
    """A typed number (a comma as decimal point too); the text itself when it is not one,
    so that validation names the field."""
    text = text.strip().replace(",", ".")
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return text


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _rule_of(form: Any, values: dict[str, Any], label: str) -> dict[str, Any]:
    pct = _number(values["deal_pct"])
    business = values["business"]
    return {
        "name": values["name"] or f"Alerts for {label}"[:100],
        "kinds": form.getlist("kinds"),
        "deal_ratio": pct / 100 if isinstance(pct, float) else (pct if pct is not None else 0.7),
        "filters": {
            "price_min": _number(values["price_min"]),
            "price_max": _number(values["price_max"]),
            **{name: _split(values[name]) for name in LIST_FIELDS},
            "business": None if not business else business == "business",
            "min_confidence": values["min_confidence"] or "any",
        },
        "channel_ids": form.getlist("channel_ids"),
        "mode": values["mode"] or "instant",
        "digest_hour": values["digest_hour"] or 8,
        "quiet_start": values["quiet_start"] or None,
        "quiet_end": values["quiet_end"] or None,
        "timezone": values["timezone"] or "UTC",
        "enabled": values["enabled"],
    }


def _errors(err: ValidationError) -> dict[str, str]:
    errors: dict[str, str] = {}
    for problem in err.errors(include_url=False):
        loc = [str(part) for part in problem["loc"]]
        field = loc[1] if loc[:1] == ["filters"] and len(loc) > 1 else (loc[0] if loc else "")
        if field in ("", "filters"):  # a rule across fields: named by what it is about
            message = str(problem["msg"])
            field = (
                "quiet_start" if "quiet" in message else "price_max" if "price" in message else ""
            )
        errors.setdefault(field or "form", FIELD_WORDS.get(field, "Check this field."))
    return errors


@blueprint.post("/monitors/<id:monitor_id>/alerts")
async def save_alerts(monitor_id: str) -> Response:
    svc = services()
    who = await signed_in_form()
    monitor = await owned_monitor(svc.store, monitor_id, who.workspace_id)
    form = await request.form
    values: dict[str, Any] = {k: form.get(k, "").strip() for k in TEXT_FIELDS}
    values["kinds"] = form.getlist("kinds")
    values["channel_ids"] = form.getlist("channel_ids")
    values["enabled"] = form.get("enabled") == "on"
    if not values["kinds"]:
        await actions.set_monitor_rules(svc.store, who.workspace_id, monitor.id, [])
        return see_other(f"/monitors/{monitor.id}/alerts?notice=cleared")
    try:
        rule = MonitorRule.model_validate(  # form fields are text: numbers parsed from it
            _rule_of(form, values, monitor.label or "this monitor"), strict=False
        )
    except ValidationError as err:
        return await _alerts_page(who, monitor.id, status=422, form=values, errors=_errors(err))
    try:
        await actions.set_monitor_rules(svc.store, who.workspace_id, monitor.id, [rule])
    except ApiError as err:
        return await _alerts_page(
            who, monitor.id, status=err.status, form=values, error=explain(err)
        )
    return see_other(f"/monitors/{monitor.id}/alerts?notice=saved")
