"""Every Redis key Verbatim writes, in one place.

Redis holds only what may be lost and rebuilt from PostgreSQL: if it is flushed, the
stalled-session sweep re-queues every session with work outstanding.

``lease:{session}``
    The running run's lease token. TTL lease_ttl_s (60 s), renewed by the heartbeat.
    Written by the capture run (SET NX PX), released by compare-and-DEL.
``queued:{session}``
    "A capture message for this session is in the queue". TTL queue_marker_ttl_s (+ countdown).
    Set by enqueue, cleared when a run picks the message up.
``sweep:lock``
    One beat's sweep at a time. TTL just under sweep_interval_s. Written by the sweeps.
Celery's own keys (the ``capture`` and ``sweeps`` queues, unacked messages)
    Written by Celery; lost on a flush and rebuilt by the stalled-session sweep.
"""

from __future__ import annotations

from uuid import UUID

SWEEP_LOCK = "sweep:lock"
CAPTURE_QUEUE = "capture"


def lease(session_id: UUID | str) -> str:
    """The capture-run lease of one session."""
    return f"lease:{session_id}"


def queued(session_id: UUID | str) -> str:
    """Marker that a capture message for the session sits in the broker queue."""
    return f"queued:{session_id}"

