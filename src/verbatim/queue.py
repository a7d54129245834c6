"""Putting a session on the capture queue (the Celery broker), without knowing the tasks.

The queue only carries "start a run now". When to look at a session again (a message lost
with a flushed Redis, a retry after a transient fault, a run killed outright) is the due
time in PostgreSQL (``durable_runs.due_at``), scanned by the sweep process: no queue
markers, no countdown messages (Celery's Redis transport holds ETA messages in a busy
worker's prefetch, where they cannot fire).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection

import redis
from celery import Celery

from verbatim import keys

CAPTURE_TASK = "verbatim.capture"
#: a note run; same queue and workers as capture runs (each run is short and durable on its own)
NOTE_TASK = "verbatim.note"


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
        # A Redis outage of any length is waited out (kombu's backoff), never a worker exit.
        broker_connection_retry=True,
        broker_connection_max_retries=None,
        broker_transport_options={"visibility_timeout": 3 * 3600},
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
    )
    return app


class CaptureQueue:
    """Producer side of the capture queue."""

    def __init__(self, celery_app: Celery):
        self._app = celery_app

    def enqueue(self, session_id: uuid.UUID) -> None:
        """Queue one capture run for the session. Raises redis/kombu errors if the broker is down."""
        self._app.send_task(CAPTURE_TASK, args=[str(session_id)], queue=keys.CAPTURE_QUEUE, retry=False)

    def enqueue_note(self, note_id: uuid.UUID) -> None:
        """Queue one note run. Raises redis/kombu errors if the broker is down."""
        self._app.send_task(NOTE_TASK, args=[str(note_id)], queue=keys.CAPTURE_QUEUE, retry=False)


#: how many waiting messages ``waiting`` reads at most (the queue's oldest end is what a worker takes next)
WAITING_SCAN_MAX = 20_000


def waiting(client: redis.Redis, subject_ids: Collection[uuid.UUID], queue: str = keys.CAPTURE_QUEUE,
            scan_max: int = WAITING_SCAN_MAX) -> set[uuid.UUID]:
    """Which of ``subject_ids`` still have a message waiting in the broker's queue, untaken.

    Reads Celery's Redis list for ``queue`` (kombu: one JSON message per item, the task's
    arguments in ``headers.argsrepr``), at most ``scan_max`` messages. Such a message cannot
    have been lost — a flush or a restart without persistence removes it from this list — so
    the sweep does not send another (``pipeline.sweeps``). Raises redis errors when the broker
    is unreachable. Read-only: the queue itself stays Celery's.
    """
    if not subject_ids:
        return set()
    wanted = {str(sid): sid for sid in subject_ids}
    found: set[uuid.UUID] = set()
    for raw in client.lrange(queue, 0, scan_max - 1):
        try:
            args = json.loads(raw).get("headers", {}).get("argsrepr") or ""
        except (ValueError, AttributeError):
            continue
        for text_id, sid in wanted.items():
            if text_id in args:
                found.add(sid)
        if len(found) == len(wanted):
            break
    return found
