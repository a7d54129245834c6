"""A therapist withdraws a session: mark it deleted (fenced), then delete every copy.

The withdrawal takes a fencing token of its own (bumping ``fence`` without counting a
run), so a capture run still working on the session loses its fence and stops at its next
write; the deletes happen only after the fenced write that marks the session deleted.
"""

from __future__ import annotations

import uuid

from sqlalchemy import delete, func, insert, update

from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import Session, SessionEvent, Transcript
from verbatim.db.repo import Repo
from verbatim.reliability.models import ReliabilitySuggestion
from verbatim.states import SessionStatus, predecessors
from verbatim.storage import AudioVolume


def withdraw(repo: Repo, volume: AudioVolume, settings: Settings, session_id: uuid.UUID) -> None:
    """Delete a session's audio, vendor job, checkpoint and transcripts (idempotent)."""
    from verbatim.runtime import make_recognizer

    with db_session(repo.url) as db:
        row = db.execute(
            update(Session)
            .where(Session.id == session_id,
                   Session.status.in_([s.value for s in predecessors(SessionStatus.DELETED)]))
            .values(status=SessionStatus.DELETED.value, fence=Session.fence + 1, raw_turns=None,
                    published_turns=None, audio_path=None, updated_at=func.now(), finished_at=func.now())
            .returning(Session.runs)
        ).one_or_none()
        db.execute(delete(Transcript).where(Transcript.session_id == session_id))
        # Suggestions quote the transcript: they go with it (their action rows hold no text and stay).
        db.execute(delete(ReliabilitySuggestion).where(ReliabilitySuggestion.session_id == session_id))
        if row is not None:
            db.execute(insert_event(session_id, row.runs))
    # Deletes only after the fenced write above committed.
    recognizer = make_recognizer(settings)
    try:
        for job_id in repo.ledger_jobs(session_id):
            recognizer.delete(job_id)
            repo.mark_vendor_deleted(job_id, "withdrawn")
    finally:
        recognizer.close()
    volume.delete(volume.path_for(session_id))


def insert_event(session_id: uuid.UUID, run: int):

    return insert(SessionEvent).values(session_id=session_id, run=run, kind="session_deleted")
