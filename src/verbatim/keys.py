"""Every Redis key Verbatim writes, in one place.

Redis holds only what may be lost and rebuilt from PostgreSQL: if it is flushed, the
sweep process re-queues every session with work outstanding (its due time passes).

``lease:{session}``
    The running capture run's lease token. TTL lease_ttl_s (60 s), renewed by the heartbeat.
    Written by the capture run (SET NX PX), released by compare-and-DEL.
``lease:{kind}:{subject}``
    The same for other kinds of durable run (e.g. ``lease:note:{note id}``).
``worker:{name}``
    A capture worker's identity (``verbatim worker --name``): ``host:pid:start time`` of the live
    process holding it. TTL worker_lease_ttl_s (15 s), renewed by the process; a collision refuses to start.
``auth_failures:{client address}``
    Failed sign-ins, link codes and bearer tokens from one client address in the current minute
    (an integer). TTL 60 s from the first failure; written by the API (``verbatim.api.guessing``).
Celery's own keys (the ``capture`` queue, unacked messages)
    Written by Celery; lost on a flush and rebuilt from the due times in PostgreSQL.
"""

from __future__ import annotations

from uuid import UUID

CAPTURE_QUEUE = "capture"


def lease(session_id: UUID | str) -> str:
    """The capture-run lease of one session."""
    return f"lease:{session_id}"


def run_lease(kind: str, subject_id: UUID | str) -> str:
    """The lease of one durable run of another kind than capture."""
    return f"lease:{kind}:{subject_id}"



def worker(name: str) -> str:
    """The identity lease of one capture worker."""
    return f"worker:{name}"


#: the prefix of every ``auth_failures`` key (tests clear them between independent attackers)
AUTH_FAILURES_PREFIX = "auth_failures:"


def auth_failures(client: str) -> str:
    """The failure count of one client address in the current minute."""
    return f"{AUTH_FAILURES_PREFIX}{client}"
