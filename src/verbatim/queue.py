"""Putting a session on the capture queue (the Celery broker), without knowing the tasks.

Enqueue sets ``queued:{session}`` first, so the stalled-session sweep can tell "waiting in
the queue" from "lost": if Redis is flushed, marker and message vanish together and the
sweep re-queues; if the send fails, the marker is removed (or expires) and the sweep
re-queues.
"""

from __future__ import annotations

import uuid

import redis
from celery import Celery

from verbatim import keys

CAPTURE_TASK = "verbatim.capture"
SWEEP_TASK = "verbatim.sweep"
SWEEP_QUEUE = "sweeps"
RECHECK_TASK = "verbatim.recheck"


def celery_app(broker_url: str) -> Celery:
    """The Celery app, configured once for producers (API) and consumers (workers).

    acks_late + prefetch 1: a message is acknowledged only after its run ends, and a worker
    holds one message at a time. Liveness never depends on the broker's visibility timeout:
    the lease and the stalled-session sweep decide (DESIGN.md).
    """
    app = Celery("verbatim", broker=broker_url)
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        result_backend=None,
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=keys.CAPTURE_QUEUE,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": 3 * 3600},
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
    )
    return app


class CaptureQueue:
    """Producer side of the capture queue."""

    def __init__(self, celery_app: Celery, client: redis.Redis, marker_ttl_s: float):
        self._app = celery_app
        self._redis = client
        self._marker_ttl_ms = int(marker_ttl_s * 1000)

    def enqueue(self, session_id: uuid.UUID, countdown_s: float | None = None) -> None:
        """Queue one capture run for the session. Raises redis/kombu errors if the broker is down."""
        marker = keys.queued(session_id)
        self._redis.set(marker, "1", px=self._marker_ttl_ms + int((countdown_s or 0) * 1000))
        try:
            self._app.send_task(
                CAPTURE_TASK, args=[str(session_id)], queue=keys.CAPTURE_QUEUE, countdown=countdown_s,
                retry=False,
            )
        except Exception:
            self._redis.delete(marker)
            raise

    def recheck_at_lease_expiry(self, session_id: uuid.UUID, in_s: float) -> None:
        """Schedule a one-session stall check ``in_s`` seconds from now (when its lease would expire)."""
        self._app.send_task(RECHECK_TASK, args=[str(session_id)], queue=SWEEP_QUEUE, countdown=in_s, retry=False)

    def is_queued(self, session_id: uuid.UUID) -> bool:
        """Whether a capture message for the session is (believed) waiting in the queue."""
        return bool(self._redis.exists(keys.queued(session_id)))

    def started(self, session_id: uuid.UUID) -> None:
        """A run picked the message up: the session is no longer waiting in the queue."""
        self._redis.delete(keys.queued(session_id))
