"""The Celery app for capture workers and beat (``celery -A workers.app``).

Importing this module creates no connection: the broker URL is read from settings, and
database engines / Redis clients are built per process when the first task runs.
Run workers with the solo pool (one session per process; scale with more processes):
``verbatim worker`` does this.
"""

from __future__ import annotations

from verbatim.config import get_settings
from verbatim.queue import SWEEP_QUEUE, SWEEP_TASK, celery_app

settings = get_settings()
app = celery_app(settings.redis_url or "redis://127.0.0.1:6379/0")
app.conf.beat_schedule = {
    "sweeps": {"task": SWEEP_TASK, "schedule": settings.sweep_interval_s, "options": {"queue": SWEEP_QUEUE}},
}
app.conf.include = ["workers.tasks", "workers.signals"]
