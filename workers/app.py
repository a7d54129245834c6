"""The Celery app for capture workers (``celery -A workers.app``).

Importing this module creates no connection: the broker URL is read from settings, and
database engines / Redis clients are built per process when the first task runs.
Run workers with the solo pool (one session per process; scale with more processes):
``verbatim worker`` does this. There is no beat schedule: the sweeps run in a process of
their own (``verbatim sweeper``), so they never wait behind capture work.
"""

from __future__ import annotations

from verbatim.config import get_settings
from verbatim.queue import celery_app

settings = get_settings()
app = celery_app(settings.redis_url or "redis://127.0.0.1:6379/0")
app.conf.include = ["workers.tasks", "workers.signals"]
