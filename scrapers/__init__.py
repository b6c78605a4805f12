"""scrapers."""
