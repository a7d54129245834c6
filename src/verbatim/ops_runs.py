"""Every run that is not finished, of every kind, with its state: what ``verbatim runs`` and
``GET /v1/admin/runs`` show an operator. Metadata only: no client ids, no transcript or note text.

A run's state is the core's (``verbatim.durable.subjects``: one SQL expression every view reads):
running, parked, due, overdue (work outstanding that nobody is looking at), blocked, cancelled.
The holder is shown while its lease is live (read from Redis in one round trip).
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import redis
from sqlalchemy import text

from verbatim import keys
from verbatim.db.engine import db_session
from verbatim.durable.subjects import RunPhase as RunState
from verbatim.durable.subjects import Subjects
from verbatim.errors import NotFound
from verbatim.notes.states import NOTE_SUBJECTS
from verbatim.states import CAPTURE_SUBJECTS

#: the kinds of run an operator sees (their subjects' tables and statuses)
KINDS: tuple[Subjects, ...] = (CAPTURE_SUBJECTS, NOTE_SUBJECTS)

__all__ = ["KINDS", "RunRow", "RunState", "list_runs", "show_run"]


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


def _rows_sql(subjects: Subjects, extra: str) -> str:
    values = ", ".join(f"'{v}'" for v in subjects.live + subjects.blocked + subjects.cancelled)
    cancelled = ", ".join(f"'{v}'" for v in subjects.cancelled) or "NULL"
    # A withdrawn subject is listed while it still has a due time (its clean-up), not for ever after.
    event_fault = ("(SELECT e.failure_code FROM session_events e WHERE e.session_id = s.id "
                   "AND e.failure_code IS NOT NULL ORDER BY e.id DESC LIMIT 1)" if subjects.table == "sessions"
                   else "NULL")
    return f"""
        SELECT * FROM (
            SELECT '{subjects.kind}' AS kind, s.id AS subject_id, coalesce(r.runs, 0) AS runs, r.due_at, r.deadline_at,
                   r.holder, coalesce(r.updated_at, s.updated_at) AS updated_at, s.status AS subject_status,
                   {event_fault} AS event_fault, s.failure_code AS subject_fault,
                   {subjects.phase_sql()} AS phase
            FROM {subjects.table} s
            LEFT JOIN durable_runs r ON r.kind = '{subjects.kind}' AND r.subject_id = s.id
            WHERE s.status IN ({values})
              AND (s.status NOT IN ({cancelled}) OR r.due_at IS NOT NULL OR r.parked_at IS NOT NULL) {extra}
        ) AS runs WHERE phase IS NOT NULL
        ORDER BY updated_at LIMIT :limit
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
    if subject_id:
        extra += " AND s.id = :sid"
        params["sid"] = subject_id
    rows: list[Any] = []
    with db_session(database_url) as db:
        for subjects in KINDS:
            if kind is None or kind == subjects.kind:
                rows += db.execute(text(_rows_sql(subjects, extra)), params).all()
    rows.sort(key=lambda r: r.updated_at)
    rows = [r for r in rows if state is None or r.phase == state.value][:limit]
    pipe = client.pipeline(transaction=False)
    for r in rows:
        pipe.exists(_lease_key(r.kind, r.subject_id))
    live = pipe.execute() if rows else []
    return [RunRow(
        kind=r.kind, subject_id=str(r.subject_id), state=RunState(r.phase), subject_status=r.subject_status,
        holder=r.holder if lease and r.phase == RunState.RUNNING else None, since=_iso(r.updated_at) or "",
        next_due_at=_iso(r.due_at), deadline_at=_iso(r.deadline_at), runs=r.runs,
        last_fault_code=r.event_fault or r.subject_fault,
    ) for r, lease in zip(rows, live, strict=True)]


def show_run(database_url: str, client: redis.Redis, subject_id: uuid.UUID) -> list[RunRow]:
    """The non-terminal runs of one subject (a session has its capture run; a note its note run)."""
    found = list_runs(database_url, client, subject_id=subject_id)
    if not found:
        raise NotFound(f"no unfinished run for {subject_id}")
    return found
