"""The OpenAPI document's tags: every operation listed under the resource it acts on.

Swagger UI groups operations by tag and puts untagged ones under "default". The tag follows
from the operation's path (the first entry of `PATH_TAGS` that covers it), so routes need not
repeat it and one table shows the grouping. A path no entry covers is a `ValueError` when the
document is built: a new route is given a resource rather than falling back to "default".
"""

from __future__ import annotations

import re
from typing import Any, Final

# In the order Swagger UI shows them.
TAGS: Final[tuple[tuple[str, str], ...]] = (
    ("Accounts", "Registration, sign-in and -out, the signed-in user, e-mail confirmation"),
    ("Access tokens", "Personal access tokens (`nsc_...`) for the API and MCP clients"),
    ("Monitors", "Monitors that poll a catalogue search: start, pause, resume, delete"),
    ("Listings", "The listings a monitor keeps, by state, niche and price"),
    ("Runs", "One-off analyses of a catalogue search: start, follow, cancel, replay"),
    ("Analyses", "Finished analyses: their niches and graphs"),
    ("Imports and exports", "A monitor's history as a document, and importing one as an analysis"),
    ("Market", "Price books (what sells at which price) and the workspace's buying costs"),
    ("Dashboard", "The dashboard and the analysis pinned to it"),
    (
        "Notifications",
        "Channels, the rules that send alerts to them, the alerts and their deliveries; "
        "the webhook events a webhook channel receives",
    ),
    ("Billing", "Plans, the subscription, checkout, trial and the payment provider's webhook"),
    ("Operators", "For operators only: marketplace sessions, actors, cluster nodes"),
    ("MCP", "The Model Context Protocol transport and its manifests"),
    ("System", "Health and status of the service"),
)
TAG_NAMES: Final = frozenset(name for name, _ in TAGS)

# Path (parameters written `{}`) -> tag, most specific first: a path is covered by an entry
# equal to it or by one of its parent paths.
PATH_TAGS: Final[tuple[tuple[str, str], ...]] = (
    ("/api/auth", "Accounts"),
    ("/api/account/keys", "Access tokens"),
    ("/api/monitoring/export-schema", "Imports and exports"),
    ("/api/monitoring/{}/export", "Imports and exports"),
    ("/api/analysis/import-monitoring", "Imports and exports"),
    ("/api/monitoring/{}/listings", "Listings"),
    ("/api/monitoring", "Monitors"),
    ("/api/runs", "Runs"),
    ("/api/analyses/{}/price-book", "Market"),
    ("/api/analyses", "Analyses"),
    ("/api/market", "Market"),
    ("/api/dashboard", "Dashboard"),
    ("/api/notifications", "Notifications"),
    ("/api/billing", "Billing"),
    ("/api/ops", "Operators"),
    ("/mcp", "MCP"),
    ("/.well-known/mcp", "MCP"),
    ("/.well-known/mcp.json", "MCP"),
    ("/api/status", "System"),
    ("/health", "System"),
)
WEBHOOKS_TAG: Final = "Notifications"

_PARAMETER = re.compile(r"\{[^}]*\}")
# A path item's other keys (`parameters`, `summary`) are not operations.
_METHODS: Final = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})


def tag_of(path: str) -> str:
    """The tag of the operations at `path` (an OpenAPI path such as `/api/runs/{run_id}`)."""
    generic = _PARAMETER.sub("{}", path)
    for prefix, tag in PATH_TAGS:
        if generic == prefix or generic.startswith(f"{prefix}/"):
            return tag
    raise ValueError(f"no tag for {path}: add it to PATH_TAGS in api/http/openapi_tags.py")


def tag_operations(document: dict[str, Any]) -> None:
    """Tag every operation of `document` (and its webhooks) and declare the tags."""
    for path, item in document.get("paths", {}).items():
        _tag(item, tag_of(path))
    for item in document.get("webhooks", {}).values():
        _tag(item, WEBHOOKS_TAG)
    document["tags"] = [{"name": name, "description": text} for name, text in TAGS]


def _tag(path_item: dict[str, Any], tag: str) -> None:
    for method, operation in path_item.items():
        if method in _METHODS:
            operation["tags"] = [tag]
