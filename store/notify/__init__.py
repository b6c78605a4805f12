"""Notifications: channels, rules, the outbox and its deliveries, and the alerts' payloads.

Private to `store`: everything public is named in `store/__init__.py`.
"""
