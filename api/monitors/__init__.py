"""Monitors (`/api/monitoring/*`): start, list, read, pause/resume, delete, listings, and the
streamed export (`export`).
"""
