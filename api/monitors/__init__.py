"""api.monitors."""
