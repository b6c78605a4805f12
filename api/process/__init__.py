"""api.process."""
