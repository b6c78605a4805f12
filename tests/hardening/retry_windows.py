"""Which requests a client sent inside a Retry-After window it had been told of."""

from __future__ import annotations

from typing import Any

IN_FLIGHT = 1  # the client sends at most two requests to an origin at once (concurrency 2)
IN_FLIGHT_GRACE = 0.25  # seconds: how late a request sent before a 429 may still arrive


def sent_inside_a_window(
    log: list[dict[str, Any]], in_flight_at_most: int = IN_FLIGHT
) -> list[dict[str, Any]]:
    """Requests that arrived inside a Retry-After window and cannot have been in flight when
    the 429 went out: besides the request that got the 429, at most `in_flight_at_most` other
    can be, and each arrives within `IN_FLIGHT_GRACE`. (The simulator's own `early` flag allows
    10 ms, which a service sharing this process's event loop, or a busy machine, can exceed.)"""
    late: list[dict[str, Any]] = []
    for i, answer in enumerate(log):
        if answer["status"] != 429:
            continue
        start, end = answer["t"], answer["t"] + float(answer["retry_after"])
        inside = [
            e for e in log[i + 1 :] if e["client"] == answer["client"] and start < e["t"] < end
        ]
        in_flight = [e for e in inside if e["t"] - start <= IN_FLIGHT_GRACE][:in_flight_at_most]
        late += [e for e in inside if not any(e is f for f in in_flight)]
    return late
