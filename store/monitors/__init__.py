"""Monitors: monitors, their listings, listing events and polls, and recording a poll.

Private to `store`: everything public is named in `store/__init__.py`.
"""
