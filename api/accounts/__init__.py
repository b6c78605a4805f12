"""api.accounts.rest."""
