"""Analysis runs (`/api/runs/*`): create, list, read, cancel, replay, delete, log, alerts."""
