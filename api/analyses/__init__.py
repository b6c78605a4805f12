"""api.analyses.rest."""
