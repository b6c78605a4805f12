"""Cluster mode: nodes, their commands, leases and the fencing token (PostgreSQL only).

Private to `store`: everything public is named in `store/__init__.py`.
"""
