"""ApiErrors of the shared functions, told as sentences a person understands."""

from __future__ import annotations

from api.http.errors import ApiError

_FIXED = {
    "plan_required": "Your workspace has no plan or trial yet, so it can look but not start "
    "anything. Start the free trial or choose a plan on the Billing page.",
    "busy": "That monitor is busy finishing a check. Wait a second and try again.",
    "run_finished": "This analysis has already finished, so there is nothing to cancel.",
    "run_running": "This analysis is still running. Cancel it first, then delete it.",
    "source_gone": "The monitor this analysis used was deleted, so it cannot be replayed.",
    "billing_unconfigured": "Payments are not set up on this server yet. "
    "Ask the person who runs it to connect a payment provider.",
    "already_subscribed": "Your workspace already has a subscription. "
    "Change it from the billing portal.",
    "trial_used": "The free trial has already been used by this workspace or e-mail address.",
    "no_customer": "There is no billing account to manage yet: subscribe to a plan first.",
    "checkout_incomplete": "The payment is not complete yet. If you just paid, "
    "reload this page in a few seconds.",
    "no_catalogue_url": "This analysis does not say which catalogue it looked at, so it "
    "cannot be monitored. Start the monitor with the catalogue URL instead.",
    "missing_file": "Choose the export file to upload.",
    "payload_too_large": "That file is too large to import.",
    "rate_limited": "Too many attempts in a short time. Wait a minute and try again.",
}


# What a person can do within the plan, per quota (the API's advice names fields instead).
_WITHIN_PLAN = {
    "active_monitors": "Within your plan: pause or delete a monitor you no longer need.",
    "runs_per_day": "Within your plan: wait until midnight (UTC), when the day's count restarts.",
    "items_per_run": "Within your plan: leave the number of listings empty for the most it allows.",
    "min_poll_seconds": "Within your plan: check less often, or leave the interval empty.",
}


def _quota(err: ApiError) -> str:
    # The message already says the limit, the request and the next plan up (or that there is
    # none) in words; a person buys on the Billing page, not through the API's path.
    text = err.message
    if err.extra.get("upgrade_to") and err.extra.get("upgrade_purchasable"):
        text += " See the Billing page."
    remedy = _WITHIN_PLAN.get(str(err.extra.get("quota")))
    return f"{text} {remedy}" if remedy else text


def explain(err: ApiError) -> str:
    """One or two sentences for `err`, never JSON and never an API path."""
    code = err.code
    if code == "quota_exceeded":
        return _quota(err)
    if code in _FIXED:
        return _FIXED[code]
    if code == "url_refused":
        return (
            f"{err.message}. Copy the address of a catalogue page of the marketplace from "
            "your browser's address bar."
        )
    if code == "interval_too_short":
        least = err.extra.get("min_interval_seconds")
        return f"Checks cannot be closer than {least} seconds apart; choose a longer interval."
    if code == "invalid_export":
        return f"{err.message}. Upload the file exactly as a monitor's export produced it."
    if code == "not_found":
        return "That no longer exists, or it is not in your workspace."
    # The remaining messages are already sentences (they name no field or path).
    return err.message if err.message.endswith(".") else err.message + "."
