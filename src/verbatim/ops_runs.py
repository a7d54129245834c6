"""Every run that is not finished, of every kind, with its state: what ``verbatim runs`` and
``GET /v1/admin/runs`` show an operator. Metadata only: no client ids, no transcript or note text.

A run's state comes from one function, :func:`run_state`. The durable-run core is growing its own
"one state per run" (running, parked, due, overdue, blocked, cancelled); when it lands, point
:func:`run_state` at it and nothing else here changes.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import redis
from sqlalchemy import text

from verbatim import keys
from verbatim.db.engine import db_session
from verbatim.errors import NotFound


class RunState(StrEnum):
    """Where a run is, as an operator needs to know it."""

    RUNNING = "running"  #: a worker holds its lease now
    PARKED = "parked"  #: waiting on the recognizer (or another outside party); no worker held
    DUE = "due"  #: no lease; the sweep process queues it at ``next_due_at`` (now or later)
    OVERDUE = "overdue"  #: past its wall-clock deadline and not yet failed by the sweep
    BLOCKED = "blocked"  #: stopped on a configuration fault; an admin retries it once fixed
    CANCELLED = "cancelled"  #: its subject was withdrawn; only clean-up is left


@dataclass(frozen=True)
class RunRow:
    """One non-terminal run. Times are UTC ISO 8601; ``since`` is the run row's last change."""

    kind: str
    subject_id: str
    state: RunState
    subject_status: str | None
    holder: str | None
    since: str
    next_due_at: str | None
    deadline_at: str | None
    runs: int
    last_fault_code: str | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_state(*, subject_status: str | None, lease_live: bool, parked: bool, due_at: datetime | None,
              deadline_at: datetime | None, now: datetime) -> RunState:
    """The one place a run's state is decided (see the module docstring).

    The subject's own terminal-ish statuses win (withdrawn → cancelled, blocked → blocked); then a
    live lease means a worker is at it; then a passed deadline; then parked; else it waits to be due.
    """
    if subject_status == "deleted":
        return RunState.CANCELLED
    if subject_status == "blocked":
        return RunState.BLOCKED
    if lease_live:
        return RunState.RUNNING
    if deadline_at is not None and deadline_at < now:
        return RunState.OVERDUE
    if parked:
        return RunState.PARKED
    return RunState.DUE


# Non-terminal: something is still to happen (a due time, a park) or an admin must act (blocked).
# A capture run's subject is a session; other kinds carry their state in durable_runs alone.
_ROWS = """
SELECT r.kind, r.subject_id, r.runs, r.due_at, r.deadline_at, r.parked_at, r.holder, r.updated_at,
       s.status AS subject_status,
       (SELECT e.failure_code FROM session_events e
         WHERE r.kind = 'capture' AND e.session_id = r.subject_id AND e.failure_code IS NOT NULL
         ORDER BY e.id DESC LIMIT 1) AS event_fault,
       s.failure_code AS subject_fault,
       now() AS db_now
FROM durable_runs r
LEFT JOIN sessions s ON r.kind = 'capture' AND s.id = r.subject_id
WHERE (r.due_at IS NOT NULL OR r.parked_at IS NOT NULL OR s.status = 'blocked')
  AND coalesce(s.status, '') NOT IN ('ready', 'failed')
  {extra}
ORDER BY r.updated_at
LIMIT :limit
"""


def _lease_key(kind: str, subject_id: uuid.UUID) -> str:
    return keys.lease(subject_id) if kind == "capture" else keys.run_lease(kind, subject_id)


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat() if value is not None else None


def list_runs(database_url: str, client: redis.Redis, *, kind: str | None = None,
              state: RunState | None = None, subject_id: uuid.UUID | None = None, limit: int = 500) -> list[RunRow]:
    """Every non-terminal run (oldest change first), optionally of one kind, in one state, of one subject.

    Leases are read from Redis in one round trip; Redis unreachable raises ``redis.RedisError``
    (the caller answers 503: without leases, running and due cannot be told apart).
    """
    extra = ""
    params: dict[str, Any] = {"limit": limit}
    if kind:
        extra += " AND r.kind = :kind"
        params["kind"] = kind
    if subject_id:
        extra += " AND r.subject_id = :sid"
        params["sid"] = subject_id
    with db_session(database_url) as db:
        rows = db.execute(text(_ROWS.format(extra=extra)), params).all()
    pipe = client.pipeline(transaction=False)
    for r in rows:
        pipe.exists(_lease_key(r.kind, r.subject_id))
    live = pipe.execute() if rows else []
    out = []
    for r, lease in zip(rows, live, strict=True):
        st = run_state(subject_status=r.subject_status, lease_live=bool(lease), parked=r.parked_at is not None,
                       due_at=r.due_at, deadline_at=r.deadline_at, now=r.db_now)
        if state is not None and st != state:
            continue
        out.append(RunRow(
            kind=r.kind, subject_id=str(r.subject_id), state=st, subject_status=r.subject_status,
            holder=r.holder if st == RunState.RUNNING else None, since=_iso(r.updated_at) or "",
            next_due_at=_iso(r.due_at), deadline_at=_iso(r.deadline_at), runs=r.runs,
            last_fault_code=r.event_fault or r.subject_fault,
        ))
    return out


def show_run(database_url: str, client: redis.Redis, subject_id: uuid.UUID) -> list[RunRow]:
    """The non-terminal runs of one subject (a session has its capture run; a note its note run)."""
    found = list_runs(database_url, client, subject_id=subject_id)
    if not found:
        raise NotFound(f"no unfinished run for {subject_id}")
    return found
