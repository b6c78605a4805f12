"""The courier: one channel's batch, from its sealed secrets to the destination.

What the dispatcher calls for each claimed batch: the channel's secrets are read from the
store and opened here, at the moment of sending, so plaintext never outlives one delivery.
"""

from __future__ import annotations

from collections.abc import Iterable

import httpx

from store import ChannelBatch, Store

from ._answers import SendResult
from ._dispatcher import Courier
from ._secret_box import BadSecretBox, SecretBox
from ._senders import Mail, deliver


def courier(
    store: Store,
    box: SecretBox,
    http: httpx.AsyncClient,
    *,
    mail: Mail | None,
    telegram_api_base: str,
    allow: Iterable[str] = (),
) -> Courier:
    """A `Courier` sending over `http` (the guarded outbound client) and `mail`."""
    allowed = tuple(allow)

    async def send(batch: ChannelBatch) -> SendResult:
        sealed = await store.notify.channel_secret(batch.channel.id)
        if sealed is None:
            return SendResult(False, None, None, "the channel was deleted", permanent=True)
        try:
            secrets = box.open(sealed)
        except BadSecretBox:
            return SendResult(
                False,
                None,
                None,
                "the channel's stored secrets cannot be opened: was NICHESCOPE_SECRET_KEY "
                "changed? Delete the channel and add it again",
                permanent=True,
            )
        return await deliver(
            batch.channel,
            secrets,
            batch.notifications,
            http,
            mail,
            telegram_api_base=telegram_api_base,
            allow=allowed,
        )

    return send
