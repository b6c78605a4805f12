"""Billing: plans and quotas, Stripe checkout/portal/webhooks/sync, the e-mailed trial.

Modules: `plans` (the catalogue from configuration), `quotas` (what the monitor and run
endpoints call), `gateway` (the Stripe client), `fulfil` (the one idempotent write shared by
webhook and sync), `signature` (webhook verification), `rest` (the blueprint), `cli`.
Kept free of imports here so that `api.accounts.schemas` can use `api.billing.schemas`
without a cycle.
"""
