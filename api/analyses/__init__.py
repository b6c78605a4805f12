"""Analyses (`/api/analyses/*`, `/api/dashboard`): what runs produce, their graphs, the parsed
documents kept per process (`cache`), and imports of monitor exports (`imports`).
"""
