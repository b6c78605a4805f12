"""OpenAPI links: which later calls the ids in an operation's answer make possible.

A route declares them next to its operation id, `@operation("startMonitor",
links=MONITOR.links())`; `openapi.py` writes them into the operation's success responses. A
client (or Schemathesis' stateful phase) then follows `POST /api/monitoring/start` ->
`GET /api/monitoring/{monitor_id}` with the id the first answer gave, instead of guessing ids.
Each `Resource` below names the operations that take one of its kind by id, so a new operation
on monitors is linked from every answer naming a monitor by adding it to `MONITOR` alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


def response_field(pointer: str) -> str:
    """The runtime expression for a field of the JSON answer: `$response.body#/<pointer>`."""
    return f"$response.body#/{pointer}"


@dataclass(frozen=True)
class Link:
    """One OpenAPI Link Object: the target operation and where its inputs come from.

    `parameters` maps the target's path or query parameter names, `body` fields of its JSON
    request body, to runtime expressions (`response_field("id")`). Named after its target, so
    an answer links to one operation at most once.
    """

    operation_id: str
    parameters: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, str] = field(default_factory=dict)
    description: str = ""

    @property
    def name(self) -> str:
        return self.operation_id

    def document(self) -> dict[str, Any]:
        """The Link Object as the OpenAPI document states it."""
        link: dict[str, Any] = {"operationId": self.operation_id}
        if self.parameters:
            link["parameters"] = dict(self.parameters)
        if self.body:
            link["requestBody"] = dict(self.body)
        if self.description:
            link["description"] = self.description
        return link


@dataclass(frozen=True)
class Resource:
    """A kind of resource and the operations that take one by id.

    `operations` take it as the path or query parameter `parameter`; `body_operations` as the
    JSON body field of the same name.
    """

    noun: str
    parameter: str
    operations: tuple[str, ...]
    body_operations: tuple[str, ...] = ()

    def links(self, pointer: str = "id") -> tuple[Link, ...]:
        """Links from an answer whose field `pointer` is this resource's id to every operation
        taking one (an answer whose field is null, a run without analysis, links nowhere)."""
        expression = response_field(pointer)
        description = f"The {self.noun} named by `{pointer}` of this answer"
        return (
            *(
                Link(op, {self.parameter: expression}, description=description)
                for op in self.operations
            ),
            *(
                Link(op, body={self.parameter: expression}, description=description)
                for op in self.body_operations
            ),
        )


MONITOR = Resource(
    "monitor",
    "monitor_id",
    (
        "getMonitor",
        "pauseMonitor",
        "resumeMonitor",
        "listMonitorListings",
        "exportMonitor",
        "deleteMonitor",
    ),
    body_operations=("createRun",),
)
RUN = Resource(
    "run",
    "run_id",
    (
        "getRun",
        "getRunLog",
        "downloadRunAlerts",
        "getDashboard",
        "cancelRun",
        "replayRun",
        "deleteRun",
    ),
)
ANALYSIS = Resource(
    "analysis",
    "analysis_id",
    ("getAnalysis", "getAnalysisGraphSpec", "getAnalysisGraphSvg"),
    body_operations=("startMonitor",),
)
ACCESS_TOKEN = Resource("access token", "key_id", ("revokeAccessToken",))


def link_map(links: Iterable[Link]) -> dict[str, Link]:
    """Links by name; `ValueError` when two would share one (two links to one operation)."""
    named: dict[str, Link] = {}
    for link in links:
        if link.name in named:
            raise ValueError(f"two links to {link.name}: give one the other's inputs too")
        named[link.name] = link
    return named
