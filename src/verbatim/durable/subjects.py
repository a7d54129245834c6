"""Where each kind's subjects live, and the one state of a run that every view shows.

A kind describes its subjects as data (``Subjects``: table and status values); the core turns
that into the stall net's query (``RunStore.mark_stalled``) and into a run's state:

- ``running``   — a run is counted, not ended, and its lease has not expired (``holder`` set, due later);
- ``parked``    — waiting on a vendor without a worker (``parked_at``): looked up when notified or due;
- ``due``       — waiting for its next look (queued, refunded, re-checked): the sweep looks when due;
- ``overdue``   — work outstanding but nobody is looking: no due time, or more than ``OVERDUE_GRACE_S``
                  past it (the sweep is behind or not running; the stall net re-arms a missing one);
- ``blocked``   — a configuration fault: inputs kept, an admin must retry;
- ``cancelled`` — the subject was withdrawn: no run will happen again;
- none          — no run outstanding (finished or failed: the subject's own status says which).

Every view (the API's ``run_state``, ``verbatim sessions show``, the ``verbatim_runs`` gauge)
reads it through ``phase_sql`` — one expression, so no two views disagree.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import text
from sqlalchemy.orm import Session as OrmSession

#: a due time passed by more than this (seconds) and not yet looked at means the sweep is behind
OVERDUE_GRACE_S = 60.0


class RunPhase(StrEnum):
    """The one state of a subject's run (see the module docstring)."""

    RUNNING = "running"
    PARKED = "parked"
    DUE = "due"
    OVERDUE = "overdue"
    BLOCKED = "blocked"
    CANCELLED = "cancelled"


def _values(statuses: tuple[str, ...]) -> str:
    # Status values are the kinds' own constants (enum values), never user input.
    return ", ".join(f"'{s}'" for s in statuses) or "NULL"


@dataclass(frozen=True)
class Subjects:
    """A kind's subjects: ``table`` (with ``id``, ``status``, ``updated_at``) and which statuses mean what."""

    kind: str  #: ``durable_runs.kind``
    table: str
    live: tuple[str, ...]  #: statuses with work outstanding for a run
    blocked: tuple[str, ...] = ()
    cancelled: tuple[str, ...] = ()

    def live_sql(self) -> str:
        """``SELECT id, updated_at`` of the subjects with work outstanding."""
        return f"SELECT id, updated_at FROM {self.table} WHERE status IN ({_values(self.live)})"

    def phase_sql(self, subject: str = "s", run: str = "r") -> str:
        """The run's state as an SQL expression over ``subject`` (this table) LEFT JOIN ``run`` (durable_runs)."""
        s, r = subject, run
        return f"""CASE
            WHEN {s}.status IN ({_values(self.cancelled)}) THEN 'cancelled'
            WHEN {s}.status IN ({_values(self.blocked)}) THEN 'blocked'
            WHEN {s}.status NOT IN ({_values(self.live)}) THEN NULL
            WHEN {r}.parked_at IS NOT NULL THEN 'parked'
            WHEN {r}.holder IS NOT NULL AND {r}.due_at > now() THEN 'running'
            WHEN {r}.due_at IS NULL OR {r}.due_at < now() - make_interval(secs => {OVERDUE_GRACE_S})
                THEN 'overdue'
            ELSE 'due' END"""

    def ids_in_phase_sql(self, phase: RunPhase) -> str:
        """``SELECT id`` of the subjects whose run is in ``phase`` (for a list filtered by run state)."""
        return (f"SELECT s.id FROM {self.table} s LEFT JOIN durable_runs r ON r.kind = '{self.kind}' "
                f"AND r.subject_id = s.id WHERE ({self.phase_sql()}) = '{RunPhase(phase).value}'")

    def phases(self, db: OrmSession, ids: list[uuid.UUID]) -> dict[uuid.UUID, RunPhase | None]:
        """Each subject's run state (subjects that do not exist are absent), in one query."""
        if not ids:
            return {}
        rows = db.execute(text(f"""
            SELECT s.id, {self.phase_sql()} AS phase FROM {self.table} s
            LEFT JOIN durable_runs r ON r.kind = :kind AND r.subject_id = s.id
            WHERE s.id = ANY(:ids)
        """), {"kind": self.kind, "ids": list(ids)}).all()
        return {row.id: RunPhase(row.phase) if row.phase else None for row in rows}

    def phase(self, db: OrmSession, subject_id: uuid.UUID) -> RunPhase | None:
        """One subject's run state (None: no run outstanding, or no such subject)."""
        return self.phases(db, [subject_id]).get(subject_id)

    def census(self, db: OrmSession) -> dict[RunPhase, int]:
        """How many subjects are in each run state (every state present, zeros included)."""
        rows = db.execute(text(f"""
            SELECT phase, count(*) FROM (
                SELECT {self.phase_sql()} AS phase FROM {self.table} s
                LEFT JOIN durable_runs r ON r.kind = :kind AND r.subject_id = s.id
                WHERE s.status IN ({_values(self.live + self.blocked + self.cancelled)})) AS p
            WHERE phase IS NOT NULL GROUP BY phase
        """), {"kind": self.kind}).all()
        found = {RunPhase(phase): int(n) for phase, n in rows}
        return {p: found.get(p, 0) for p in RunPhase}

    def unwatched(self, db: OrmSession) -> int:
        """Subjects with work outstanding and no due time: nobody will look at them until the stall net does."""
        return int(db.execute(text(f"""
            SELECT count(*) FROM ({self.live_sql()}) AS l
            LEFT JOIN durable_runs r ON r.kind = :kind AND r.subject_id = l.id
            WHERE r.due_at IS NULL
        """), {"kind": self.kind}).scalar_one())
