"""Runs and analyses, their log lines, and the dashboard's pinned analyses.

Private to `store`: everything public is named in `store/__init__.py`.
"""
