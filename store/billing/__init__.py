"""Billing: plans, billing accounts, checkout sessions, Stripe events, trial tokens.

Private to `store`: everything public is named in `store/__init__.py`.
"""
