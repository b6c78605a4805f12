"""What operators watch (`/api/ops/*`) and the service's own health and status (`system`)."""
