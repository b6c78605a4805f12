"""The Stripe client: the `stripe` package's async API over httpx (AnyIO, so it runs on Trio).

Only what billing uses: customers, Checkout Sessions, billing-portal sessions, subscriptions.
Answers are reduced to small frozen views so nothing above this module handles StripeObjects.
A timeout or a Stripe error becomes `PaymentProviderError` (502); with no secret key
configured, `BillingUnconfigured` (503).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import stripe
import trio

from api.http.errors import ApiError
from api.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")


class BillingUnconfigured(ApiError):
    status, code, docs_url = 503, "billing_unconfigured", "/docs#billing"

    def __init__(self) -> None:
        super().__init__(
            "Payments are not configured on this server",
            suggest=["Set NICHESCOPE_STRIPE_SECRET_KEY (see docs/billing.md)"],
        )


class PaymentProviderError(ApiError):
    status, code, docs_url = 502, "payment_provider_error", "/docs#billing"

    def __init__(self, reason: str) -> None:
        super().__init__(
            "The payment provider did not answer as expected; nothing was changed",
            suggest=["Try again in a minute"],
        )
        self.reason = reason


@dataclass(frozen=True, slots=True)
class CheckoutView:
    id: str
    url: str | None
    client_reference_id: str | None
    workspace_id: str | None
    customer: str | None
    subscription: str | None
    mode: str | None
    status: str | None
    payment_status: str | None

    @property
    def paid(self) -> bool:
        return self.status == "complete" and self.payment_status in {"paid", "no_payment_required"}


@dataclass(frozen=True, slots=True)
class SubscriptionView:
    id: str
    customer: str | None
    status: str
    price_id: str | None
    current_period_end: datetime | None
    cancel_at_period_end: bool


def _id(value: Any) -> str | None:
    """An expandable field: a bare id or an object with one."""
    if value is None or isinstance(value, str):
        return value
    return str(value["id"])


def _timestamp(value: Any) -> datetime | None:
    return datetime.fromtimestamp(int(value), UTC) if value else None


def _plain(obj: Any) -> Any:
    return obj.to_dict() if isinstance(obj, stripe.StripeObject) else obj


def checkout_view(obj: Any) -> CheckoutView:
    obj = _plain(obj)
    metadata = obj.get("metadata") or {}
    return CheckoutView(
        id=str(obj["id"]),
        url=obj.get("url"),
        client_reference_id=obj.get("client_reference_id"),
        workspace_id=metadata.get("workspace_id"),
        customer=_id(obj.get("customer")),
        subscription=_id(obj.get("subscription")),
        mode=obj.get("mode"),
        status=obj.get("status"),
        payment_status=obj.get("payment_status"),
    )


def subscription_view(obj: Any) -> SubscriptionView:
    obj = _plain(obj)
    items = ((obj.get("items") or {}).get("data")) or []
    first = items[0] if items else {}
    price = first.get("price") or {}
    # Since API version 2025-03-31 the period lives on the items; older ones kept it on top.
    period_end = first.get("current_period_end") or obj.get("current_period_end")
    return SubscriptionView(
        id=str(obj["id"]),
        customer=_id(obj.get("customer")),
        status=str(obj.get("status") or "incomplete"),
        price_id=_id(price) if isinstance(price, str) else price.get("id"),
        current_period_end=_timestamp(period_end),
        cancel_at_period_end=bool(obj.get("cancel_at_period_end")),
    )


class StripeGateway:
    """One StripeClient for the app's lifetime; close with `aclose`."""

    def __init__(self, settings: Settings, *, timeout: float = 20.0) -> None:
        self._timeout = timeout
        self._http = stripe.HTTPXClient(timeout=timeout)
        self._client = stripe.StripeClient(
            settings.stripe_secret_key,
            base_addresses={"api": settings.stripe_api_base},
            http_client=self._http,
            max_network_retries=1,
        )

    async def aclose(self) -> None:
        await self._http.close_async()

    async def _call(self, what: str, call: Awaitable[T]) -> T:
        try:
            with trio.fail_after(self._timeout * 2):
                return await call
        except trio.TooSlowError as err:
            raise PaymentProviderError(f"{what}: timeout") from err
        except stripe.StripeError as err:
            log.warning("stripe %s failed: %s", what, err)
            raise PaymentProviderError(f"{what}: {type(err).__name__}") from err

    async def create_customer(self, *, email: str, workspace_id: str, user_id: str) -> str:
        customer = await self._call(
            "create customer",
            self._client.v1.customers.create_async(
                params={
                    "email": email,
                    "metadata": {"workspace_id": workspace_id, "user_id": user_id},
                },
                options={"idempotency_key": f"customer-{workspace_id}"},
            ),
        )
        return str(customer["id"])

    async def create_checkout_session(
        self,
        *,
        customer: str,
        price_id: str,
        user_id: str,
        workspace_id: str,
        plan: str,
        success_url: str,
        cancel_url: str,
    ) -> CheckoutView:
        session = await self._call(
            "create checkout session",
            self._client.v1.checkout.sessions.create_async(
                params={
                    "mode": "subscription",
                    "customer": customer,
                    "client_reference_id": user_id,
                    "line_items": [{"price": price_id, "quantity": 1}],
                    "metadata": {"workspace_id": workspace_id, "user_id": user_id, "plan": plan},
                    "subscription_data": {"metadata": {"workspace_id": workspace_id}},
                    "success_url": success_url,
                    "cancel_url": cancel_url,
                }
            ),
        )
        return checkout_view(session)

    async def retrieve_checkout_session(self, session_id: str) -> CheckoutView | None:
        try:
            session = await self._call(
                "retrieve checkout session",
                self._client.v1.checkout.sessions.retrieve_async(session_id),
            )
        except PaymentProviderError as err:
            if _not_found(err):
                return None
            raise
        return checkout_view(session)

    async def create_portal_session(self, *, customer: str, return_url: str) -> str:
        session = await self._call(
            "create portal session",
            self._client.v1.billing_portal.sessions.create_async(
                params={"customer": customer, "return_url": return_url}
            ),
        )
        return str(session["url"])

    async def retrieve_subscription(self, subscription_id: str) -> SubscriptionView | None:
        try:
            subscription = await self._call(
                "retrieve subscription",
                self._client.v1.subscriptions.retrieve_async(subscription_id),
            )
        except PaymentProviderError as err:
            if _not_found(err):
                return None
            raise
        return subscription_view(subscription)


def _not_found(err: PaymentProviderError) -> bool:
    cause = err.__cause__
    return isinstance(cause, stripe.InvalidRequestError) and cause.http_status == 404
