"""api.runs.rest."""
