"""Accounts: workspaces, users, sessions, password resets, access tokens, proven addresses
(confirmations) and the workspace quota lock.

Private to `store`: everything public is named in `store/__init__.py`.
"""
