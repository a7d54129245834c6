"""Admin operations on sessions: list, show, retry a blocked one."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import column, select, text

from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import Session, SessionEvent
from verbatim.db.repo import Repo
from verbatim.durable.subjects import RunPhase
from verbatim.errors import IllegalTransition, NotFound
from verbatim.runtime import make_queue, require_urls
from verbatim.states import (
    CAPTURE_SUBJECTS,
    DISPLAY_STATUSES,
    PARKED,
    SessionStatus,
    check_transition,
    display_status,
)


def list_sessions(database_url: str, status: str | None = None, limit: int = 200) -> list[Session]:
    """Sessions newest first, optionally in one display status (``verbatim.states.DISPLAY_STATUSES``).

    ``parked`` is the core's run state, not a stored status: it selects the live sessions whose
    capture run is parked; a stored live status (``recognizing``…) then leaves those out, so each
    session is listed under the one status a list shows for it (``display_statuses``).
    Raises ValueError for a status not in ``DISPLAY_STATUSES``.
    """
    if status is not None and status not in DISPLAY_STATUSES:
        raise ValueError(f"status must be one of {', '.join(DISPLAY_STATUSES)}")
    stmt = select(Session).order_by(Session.updated_at.desc()).limit(limit)
    parked = Session.id.in_(text(CAPTURE_SUBJECTS.ids_in_phase_sql(RunPhase.PARKED)).columns(column("id")))
    if status == PARKED:
        stmt = stmt.where(parked)
    elif status:
        stmt = stmt.where(Session.status == status)
        if status in CAPTURE_SUBJECTS.live:
            stmt = stmt.where(~parked)
    with db_session(database_url) as db:
        return list(db.execute(stmt).scalars())


def display_statuses(database_url: str, rows: list[Session]) -> dict[uuid.UUID, str]:
    """Each session's display status (``verbatim.states.display_status``), in one query."""
    with db_session(database_url) as db:
        phases = CAPTURE_SUBJECTS.phases(db, [r.id for r in rows])
    return {r.id: display_status(r.status, phases.get(r.id)) for r in rows}


def show_session(database_url: str, session_id: uuid.UUID) -> dict[str, Any]:
    """The session's bookkeeping and event log (no transcript text, no client ids)."""
    repo = Repo(database_url)
    with db_session(database_url) as db:
        row = db.get(Session, session_id)
        if row is None:
            raise NotFound(f"no session {session_id}")
        run = repo.runs.state_in(db, session_id)
        phase = CAPTURE_SUBJECTS.phase(db, session_id)
        events = db.execute(
            select(SessionEvent).where(SessionEvent.session_id == session_id).order_by(SessionEvent.id)
        ).scalars()
        return {
            "id": str(row.id), "status": row.status, "run_state": phase.value if phase else None,
            "runs": run.runs, "fence": run.fence,
            "due_at": run.due_at.isoformat() if run.due_at else None,
            "polished": row.polished, "failure_code": row.failure_code, "vendor_job_id": row.vendor_job_id,
            "has_audio": row.audio_path is not None, "checkpointed": row.raw_turns is not None,
            "events": [{"run": e.run, "kind": e.kind, "failure_code": e.failure_code,
                        "at": e.created_at.isoformat()} for e in events],
        }


def retry_session(settings: Settings, session_id: uuid.UUID) -> None:
    """Move a blocked session back to queued (guarded) and enqueue it; raises IllegalTransition otherwise."""
    database_url, _ = require_urls(settings)
    repo = Repo(database_url)
    with db_session(database_url) as db:
        # Lock order: the run row first, then the session. Due at once (if the message below is
        # lost, the sweep process sends it within a tick), with a fresh deadline.
        repo.runs.ensure(db, session_id, settings.session_deadline_s, 0.0, reset_deadline=True)
        row = db.get(Session, session_id, with_for_update=True)
        if row is None:
            raise NotFound(f"no session {session_id}")
        check_transition(SessionStatus(row.status), SessionStatus.QUEUED)
        if row.audio_path is None and row.vendor_job_id is None:
            raise IllegalTransition("the session has neither audio nor a vendor job left to retry from")
        row.status = SessionStatus.QUEUED.value
        row.failure_code = None
        row.failure_detail = None
    make_queue(settings).enqueue(session_id)
