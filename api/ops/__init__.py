"""api.ops.rest."""
