"""Celery wiring for Verbatim: app, tasks and beat schedule. Thin calls into verbatim.pipeline."""
