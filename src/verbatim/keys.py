"""Every Redis key Verbatim writes, in one place.

Redis holds only what may be lost and rebuilt from PostgreSQL: if it is flushed, the
stalled-session sweep re-queues every session with work outstanding.

| key                      | holds                                   | TTL                 | written by            |
|--------------------------|-----------------------------------------|---------------------|-----------------------|
| ``lease:{session}``      | the running run's lease token           | lease_ttl_s (60 s)  | capture run, heartbeat |
| ``queued:{session}``     | "a capture message is in the queue"     | queue_marker_ttl_s  | enqueue; cleared when a run starts |
| ``progress:{session}``   | hash: stage, run, updated (UI progress) | 1 day               | capture run           |
| ``sweep:lock``           | one beat's sweep at a time              | sweep_interval_s    | sweeps                |
| Celery's own keys        | the ``capture`` queue and its unacked   | Celery's            | Celery                |
"""

from __future__ import annotations

from uuid import UUID

PROGRESS_TTL_S = 86_400
SWEEP_LOCK = "sweep:lock"
CAPTURE_QUEUE = "capture"


def lease(session_id: UUID | str) -> str:
    """The capture-run lease of one session."""
    return f"lease:{session_id}"


def queued(session_id: UUID | str) -> str:
    """Marker that a capture message for the session sits in the broker queue."""
    return f"queued:{session_id}"


def progress(session_id: UUID | str) -> str:
    """Hash of the session's live progress (stage, run, updated)."""
    return f"progress:{session_id}"
