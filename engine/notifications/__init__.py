"""Notifications: delivering alerts to e-mail, Standard Webhooks endpoints, Telegram, Discord.

The poll that finds an alert writes it to the outbox (`store.notify`), as the engine's alert
rules decide it (a listing's: `engine.pricing.decide_alerts`; a monitor's error and a niche's
findings: `decide_error_alerts`, `decide_niche_alerts`); the dispatcher claims
due batches and hands each to `deliver`, which sends it over the guarded outbound client and
answers with a `SendResult`. Destinations are checked (`check_destination`) before they are
stored, their secrets sealed (`SecretBox`), and only masks are ever shown.
"""

from __future__ import annotations

from ._alert_rules import decide_error_alerts, decide_niche_alerts, niche_findings
from ._answers import MAX_ANSWER_BYTES, SendResult
from ._courier import courier
from ._destinations import (
    CHANNEL_KINDS,
    DISCORD_HOSTS,
    ChannelKind,
    Destination,
    DestinationRefused,
    check_destination,
    check_discord_url,
    check_email_address,
    check_telegram_chat,
    check_telegram_token,
    check_webhook_url,
    check_webhook_url_syntax,
    hint_for,
    mask_discord_url,
    mask_email,
    mask_host,
    mask_telegram,
    mask_webhook_url,
    rotate_signing_secret,
    signing_secrets,
)
from ._dispatcher import DispatcherBoard, DispatchSettings, NotificationDispatcher
from ._messages import (
    LABELS,
    MailText,
    Outgoing,
    discord_message,
    email_text,
    ping_notification,
    telegram_text,
    webhook_body,
)
from ._outbound import DEFAULT_TELEGRAM_API, open_outbound, outbound_client
from ._secret_box import BadSecretBox, SecretBox
from ._senders import ChannelLike, Mail, NotificationLike, deliver
from ._signing import (
    BadSigningSecret,
    new_signing_secret,
    sign,
    signature_header,
    webhook_headers,
)

__all__ = [
    "CHANNEL_KINDS",
    "DEFAULT_TELEGRAM_API",
    "DISCORD_HOSTS",
    "LABELS",
    "MAX_ANSWER_BYTES",
    "BadSecretBox",
    "BadSigningSecret",
    "ChannelKind",
    "ChannelLike",
    "Destination",
    "DestinationRefused",
    "DispatchSettings",
    "DispatcherBoard",
    "Mail",
    "MailText",
    "NotificationDispatcher",
    "NotificationLike",
    "Outgoing",
    "SecretBox",
    "SendResult",
    "check_destination",
    "check_discord_url",
    "check_email_address",
    "check_telegram_chat",
    "check_telegram_token",
    "check_webhook_url",
    "check_webhook_url_syntax",
    "courier",
    "decide_error_alerts",
    "decide_niche_alerts",
    "deliver",
    "discord_message",
    "email_text",
    "hint_for",
    "mask_discord_url",
    "mask_email",
    "mask_host",
    "mask_telegram",
    "mask_webhook_url",
    "new_signing_secret",
    "niche_findings",
    "open_outbound",
    "outbound_client",
    "ping_notification",
    "rotate_signing_secret",
    "sign",
    "signature_header",
    "signing_secrets",
    "telegram_text",
    "webhook_body",
    "webhook_headers",
]
