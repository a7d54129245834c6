"""Metrics (prometheus-client) and structured logs (structlog)."""
