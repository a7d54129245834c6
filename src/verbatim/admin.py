"""Admin operations on sessions: list, show, retry a blocked one."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select

from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import Session, SessionEvent
from verbatim.db.repo import Repo
from verbatim.errors import IllegalTransition, NotFound
from verbatim.runtime import make_queue, require_urls
from verbatim.states import CAPTURE_SUBJECTS, SessionStatus, check_transition


def list_sessions(database_url: str, status: str | None = None, limit: int = 200) -> list[Session]:
    """Sessions newest first, optionally filtered by status."""
    stmt = select(Session).order_by(Session.updated_at.desc()).limit(limit)
    if status:
        stmt = stmt.where(Session.status == status)
    with db_session(database_url) as db:
        return list(db.execute(stmt).scalars())


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
