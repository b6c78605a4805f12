"""The test-only side door (`/__sim__/...`): ground truth, request log, fault knobs, the live
wire profile, the browser challenge and the clock. The scrapers never call it; robots.txt
disallows it; the challenge never stands in front of it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

import trio

from ._answer import Answer, json_answer
from ._config import Faults

if TYPE_CHECKING:
    from ._app import SimulatorApp


def side_door(app: SimulatorApp, method: str, path: str, query: str, body: bytes) -> Answer:
    """`GET /__sim__/truth[?ids=1,2]`, `GET /__sim__/requests[?since=N]`,
    `GET|POST /__sim__/faults` (a JSON object of knobs: replaces every knob, counters restart),
    `GET|POST /__sim__/profile` (`{"profile": "legacy" | "2026-09"}`: switches at once),
    `GET|POST /__sim__/challenge` (see `_challenge_door`), `GET|POST /__sim__/clock`
    (`{"paused": bool}`: simulated time stops where it is, or goes on from there;
    `{"advance": seconds}`: a paused clock moves on by that much). A POST that is
    not what it should be answers 422 and changes nothing.
    """
    params = dict(parse_qsl(query))
    if path == "/__sim__/truth":
        ids = None
        if params.get("ids"):
            ids = [int(i) for i in params["ids"].split(",") if i.isascii() and i.isdigit()]
        return json_answer(200, app.world.truth(app.sim_now(), ids))
    if path == "/__sim__/requests":
        since = int(params.get("since", "0") or 0)
        return json_answer(200, {"requests": app.log[since:], "next": len(app.log)})
    if path == "/__sim__/faults":
        if method == "POST":
            try:
                app.set_faults(Faults.from_json(_json_object(body)))
            except ValueError as err:
                return json_answer(422, {"error": str(err)})
        return json_answer(200, app.faults.to_json())
    if path == "/__sim__/profile":
        if method == "POST":
            try:
                data = _json_object(body)
                if set(data) != {"profile"} or not isinstance(data["profile"], str):
                    raise ValueError('expected {"profile": "legacy" | "2026-09"}')
                app.set_profile(data["profile"])
            except ValueError as err:
                return json_answer(422, {"error": str(err)})
        return json_answer(200, {"profile": app.profile})
    if path == "/__sim__/challenge":
        return _challenge_door(app, method, body)
    if path == "/__sim__/clock":
        if method == "POST":
            try:
                data = _json_object(body)
                if set(data) == {"advance"} and type(data["advance"]) in (int, float):
                    app.advance_clock(float(data["advance"]))
                elif set(data) == {"paused"} and isinstance(data["paused"], bool):
                    app.pause_clock(data["paused"])
                else:
                    raise ValueError('expected {"paused": true | false} or {"advance": seconds}')
            except ValueError as err:
                return json_answer(422, {"error": str(err)})
        return json_answer(200, {"sim_time": app.sim_now(), "clock": trio.current_time()})
    return json_answer(404, {"error": "unknown side-door path"})


def _challenge_door(app: SimulatorApp, method: str, body: bytes) -> Answer:
    """`POST /__sim__/challenge` with any of `{"www": bool, "clearance_ttl": seconds > 0,
    "revoke": true}`: switch the site origin's challenge, change the clearances' lifetime,
    forget every clearance granted and challenge issued. GET and POST answer the state:
    `{"www", "clearance_ttl", "pending", "cleared"}` (counts of challenges and clearances)."""
    if method == "POST":
        try:
            data = _json_object(body)
            unknown = set(data) - {"www", "clearance_ttl", "revoke"}
            if unknown:
                raise ValueError(f"unknown challenge knobs: {sorted(unknown)}")
            www, ttl, revoke = data.get("www"), data.get("clearance_ttl"), data.get("revoke")
            if www is not None and not isinstance(www, bool):
                raise ValueError("www must be a boolean")
            if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)):
                raise ValueError("clearance_ttl must be a number of seconds")
            if revoke is not None and not isinstance(revoke, bool):
                raise ValueError("revoke must be a boolean")
            app.challenge.configure(www, None if ttl is None else float(ttl))
        except ValueError as err:
            return json_answer(422, {"error": str(err)})
        if revoke:
            app.challenge.revoke_all()
    return json_answer(200, app.challenge.to_json())


def _json_object(body: bytes) -> dict[str, Any]:
    """A side-door POST body; `ValueError` unless it is a JSON object (an empty body is {})."""
    data = json.loads(body or b"{}")  # JSONDecodeError is a ValueError
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    return data
