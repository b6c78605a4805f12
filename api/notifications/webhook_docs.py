"""The OpenAPI 3.1 `webhooks`: what a webhook channel receives, one entry per event type.

Each event is a POST of a JSON body (schema version 1, the `payload` of an alert) signed as
Standard Webhooks sign them: `webhook-id` (the alert's id, the same on every retry),
`webhook-timestamp` (unix seconds of this attempt) and `webhook-signature` (`v1,<base64>`,
two of them space-separated for 24 hours after the secret was rotated). Any 2xx answer is a
delivery; anything else is retried with backoff.
"""

from __future__ import annotations

from typing import Any

DECIMAL = {"type": "string", "pattern": r"^-?[0-9]+(\.[0-9]+)?$", "description": "An amount"}
NULLABLE_DECIMAL = {"anyOf": [DECIMAL, {"type": "null"}]}
TEXT_OR_NULL = {"type": ["string", "null"]}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _object(required: list[str], properties: dict[str, Any], title: str) -> dict[str, Any]:
    return {"type": "object", "title": title, "required": required, "properties": properties}


SCHEMAS: dict[str, dict[str, Any]] = {
    "WebhookMonitor": _object(
        ["id", "label", "url"],
        {
            "id": {"type": "string"},
            "label": TEXT_OR_NULL,
            "url": {"type": "string"},
            "status": {"type": "string", "description": "monitor.error only"},
            "last_error": {**TEXT_OR_NULL, "description": "monitor.error only"},
            "explanation": {**TEXT_OR_NULL, "description": "monitor.error only: in words"},
        },
        "WebhookMonitor",
    ),
    "WebhookRule": _object(
        ["id", "name"],
        {"id": {"type": "string"}, "name": {"type": "string"}},
        "WebhookRule",
    ),
    "WebhookListing": _object(
        ["item_id", "title", "price", "currency", "url"],
        {
            "item_id": {"type": "integer"},
            "title": TEXT_OR_NULL,
            "brand": TEXT_OR_NULL,
            "size": TEXT_OR_NULL,
            "condition": TEXT_OR_NULL,
            "category": TEXT_OR_NULL,
            "price": NULLABLE_DECIMAL,
            "previous_price": {
                **NULLABLE_DECIMAL,
                "description": "listing.price_drop (and a deal found by a drop): the old price",
            },
            "currency": TEXT_OR_NULL,
            "url": TEXT_OR_NULL,
            "photo_url": TEXT_OR_NULL,
            "seller": TEXT_OR_NULL,
        },
        "WebhookListing",
    ),
    "WebhookNiche": _object(
        ["label"],
        {
            "label": {"type": "string"},
            "median_sold_price": NULLABLE_DECIMAL,
            "sold": {"type": ["integer", "null"]},
            "sell_through": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
            "median_days_to_sell": {"type": ["number", "null"]},
            "confidence": {"enum": ["none", "low", "medium", "high", None]},
            "level": {
                "enum": ["exact", "brand", "category", None],
                "description": "Listing alerts: the price book's level the figures rest on "
                "(null: too few sales to price by)",
            },
            "basis": {
                "enum": ["confirmed", "likely", None],
                "description": "Listing alerts: which sales the figures count (`likely` only "
                "where the site confirms none)",
            },
            "sales": {"type": ["integer", "null"]},
            "sold_price_p25": NULLABLE_DECIMAL,
            "sold_price_p75": NULLABLE_DECIMAL,
            "newest_sale_at": {"type": ["string", "null"], "format": "date-time"},
            "oldest_sale_at": {"type": ["string", "null"], "format": "date-time"},
        },
        "WebhookNiche",
    ),
    "WebhookBuyBelow": _object(
        ["price", "line"],
        {
            "price": {**NULLABLE_DECIMAL, "description": "The most to pay, or null"},
            "sold_for": DECIMAL,
            "margin": DECIMAL,
            "margin_share": {"type": "number"},
            "shipping": DECIMAL,
            "packaging": DECIMAL,
            "line": {"type": "string", "description": "The computation in one line"},
        },
        "WebhookBuyBelow",
    ),
}

_COMMON: dict[str, Any] = {
    "version": {"const": 1, "description": "The payload's schema version"},
    "id": {"type": "string", "description": "The alert's id, also the `webhook-id` header"},
    "created_at": {"type": "string", "format": "date-time"},
    "reason": {"type": "string", "description": "Why this alert, in words"},
    "figures": {
        "type": "object",
        "description": "The numbers behind `reason` (price, median_sold_price, discount, ...)",
        "additionalProperties": {"type": ["number", "null"]},
    },
}

# What a listing alert but a deal carries: the listing, and its niche when the service knows it.
_LISTING_MAYBE_NICHE: dict[str, Any] = {
    "listing": _ref("WebhookListing"),
    "niche": {"anyOf": [_ref("WebhookNiche"), {"type": "null"}]},
    "buy_below": {"anyOf": [_ref("WebhookBuyBelow"), {"type": "null"}]},
}

# event type -> (component name, summary, required members, extra properties)
EVENTS: dict[str, tuple[str, str, list[str], dict[str, Any]]] = {
    "listing.new": (
        "WebhookListingNew",
        "A new listing matched a rule's filters",
        ["monitor", "rule", "listing"],
        _LISTING_MAYBE_NICHE,
    ),
    "listing.deal": (
        "WebhookListingDeal",
        "A listing asks at most the rule's share of what its niche sells for",
        ["monitor", "rule", "listing", "niche"],
        {**_LISTING_MAYBE_NICHE, "niche": _ref("WebhookNiche")},
    ),
    "listing.price_drop": (
        "WebhookListingPriceDrop",
        "A listing matching a rule's filters got cheaper",
        ["monitor", "rule", "listing"],
        _LISTING_MAYBE_NICHE,
    ),
    "niche.sell_through_jump": (
        "WebhookNicheSellThroughJump",
        "A niche's sell-through rose sharply",
        ["monitor", "rule", "niche"],
        {"niche": _ref("WebhookNiche")},
    ),
    "niche.new_hot": (
        "WebhookNicheNewHot",
        "A niche became hot (sells fast, at a good price)",
        ["monitor", "rule", "niche"],
        {"niche": _ref("WebhookNiche")},
    ),
    "monitor.error": (
        "WebhookMonitorError",
        "A monitor stopped being able to check its catalogue",
        ["monitor", "rule"],
        {},
    ),
    "test.ping": (
        "WebhookTestPing",
        "Sent when someone presses “Send a test” (POST /api/notifications/channels/{id}/test)",
        [],
        {"message": {"type": "string", "description": "What the test says, in words"}},
    ),
}

HEADERS: list[dict[str, Any]] = [
    {
        "name": "webhook-id",
        "in": "header",
        "required": True,
        "description": "The alert's id: the same on every retry, so a receiver can drop repeats",
        "schema": {"type": "string", "pattern": "^ntf_[0-9A-Za-z_]+$"},
    },
    {
        "name": "webhook-timestamp",
        "in": "header",
        "required": True,
        "description": "Unix seconds when this attempt was signed; refuse ones far from now",
        "schema": {"type": "string", "pattern": "^[0-9]{1,12}$"},
    },
    {
        "name": "webhook-signature",
        "in": "header",
        "required": True,
        "description": "`v1,<base64 HMAC-SHA256 of id.timestamp.body>` keyed by the channel's "
        "`whsec_` secret; after a rotation, two of them space-separated for 24 hours: accept "
        "the message if any one matches",
        "schema": {"type": "string", "pattern": "^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$"},
    },
]


def _operation_id(event: str) -> str:
    words = event.replace(".", "_").split("_")
    return "on" + "".join(w.capitalize() for w in words)


def event_schema(event: str) -> dict[str, Any]:
    name, summary, required, extra = EVENTS[event]
    properties: dict[str, Any] = {"type": {"const": event}, **_COMMON}
    if event != "test.ping":
        properties["monitor"] = _ref("WebhookMonitor")
        properties["rule"] = _ref("WebhookRule")
    properties.update(extra)
    base = ["type", "version", "id", "created_at"]
    if event == "test.ping":
        properties.pop("reason")
        properties.pop("figures")
        base.append("message")
    else:
        base.append("reason")
    schema = _object([*base, *required], properties, name)
    schema["description"] = summary
    return schema


def document_webhooks(document: dict[str, Any]) -> None:
    """Add `webhooks` and their body schemas (components) to the OpenAPI `document`."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(SCHEMAS)
    webhooks: dict[str, Any] = {}
    for event, (name, summary, _, _) in EVENTS.items():
        schemas[name] = event_schema(event)
        webhooks[event] = {
            "post": {
                "operationId": _operation_id(event),
                "summary": summary,
                "description": __doc__.split("\n\n", 1)[1].strip() if __doc__ else summary,
                "parameters": HEADERS,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref(name)}},
                },
                "responses": {
                    "2XX": {"description": "Received: the alert counts as delivered"},
                    "default": {"description": "Not received: the alert is sent again later"},
                },
                "security": [],
            }
        }
    document["webhooks"] = webhooks
