"""Notification use cases shared by the REST views (`rest.py`), the web pages and the MCP
tools: channels (`_channels`), rules (`_rules`), tests and logs (`_deliveries`).

Every function takes the caller's workspace id and raises the `ApiError`s the JSON API
answers with; the pages tell them as sentences (`api/web/_words.py`).
"""

from __future__ import annotations

from api.notifications._channels import (
    MAX_CHANNELS,
    CreatedChannel,
    DestinationNotAccepted,
    LimitReached,
    RotatedSecret,
    channel_out,
    create_channel,
    delete_channel,
    list_channels,
    owned_channel,
    rotate_secret,
    send_confirmation,
    update_channel,
)
from api.notifications._confirm import ChannelUnconfirmed, confirm_channel
from api.notifications._deliveries import (
    PAGE_SIZE,
    Page,
    TestOutcome,
    list_deliveries,
    list_notifications,
    send_test,
)
from api.notifications._rules import (
    MAX_RULES,
    AlertSummary,
    alert_summary,
    create_rule,
    delete_rule,
    list_rules,
    new_rule,
    owned_monitor_id,
    owned_rule,
    replace_rule,
    rule_out,
    set_monitor_rules,
)

__all__ = [
    "MAX_CHANNELS",
    "MAX_RULES",
    "PAGE_SIZE",
    "AlertSummary",
    "ChannelUnconfirmed",
    "CreatedChannel",
    "DestinationNotAccepted",
    "LimitReached",
    "Page",
    "RotatedSecret",
    "TestOutcome",
    "alert_summary",
    "channel_out",
    "confirm_channel",
    "create_channel",
    "create_rule",
    "delete_channel",
    "delete_rule",
    "list_channels",
    "list_deliveries",
    "list_notifications",
    "list_rules",
    "new_rule",
    "owned_channel",
    "owned_monitor_id",
    "owned_rule",
    "replace_rule",
    "rotate_secret",
    "rule_out",
    "send_confirmation",
    "send_test",
    "set_monitor_rules",
    "update_channel",
]
