"""Retention: a transcript is deleted once its clinic's retention window has passed (a periodic sweep).

Each clinic sets how long its transcripts are kept after they are ready
(``clinics.transcript_retention_days``, 1–3650; NULL: ``VERBATIM_TRANSCRIPT_RETENTION_DAYS``).
Past it, the sweep deletes the session's transcripts, its checkpoint (raw and published turns)
and its reliability suggestions, records ``transcript_expired_at``, a session event and an audit
row (scope ``system``) — all in one transaction per session. The session row keeps its metadata;
``GET /v1/sessions/{id}`` shows ``transcript_delete_after`` beforehand and the transcript
answers 410 afterwards. Times are the database's clock.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import structlog
from sqlalchemy import delete, insert, text, update

from verbatim import audit
from verbatim.db.engine import db_session
from verbatim.db.models import SegmentEdit, Session, SessionEvent, Transcript
from verbatim.notes.retention import delete_unsigned
from verbatim.reliability.models import ReliabilitySuggestion

if TYPE_CHECKING:
    from verbatim.pipeline.context import RunContext
    from verbatim.pipeline.sweeps import SweepReport

log = structlog.get_logger("verbatim.retention")

BATCH = 200

#: SQL for "the moment this session's transcript is due for deletion" (sessions s JOIN clinics c)
DELETE_AFTER = "s.finished_at + make_interval(days => coalesce(c.transcript_retention_days, :default_days))"


def expire_transcripts(ctx: RunContext, report: SweepReport) -> None:
    """Delete the transcripts whose retention has passed, oldest first, at most BATCH per pass."""
    with db_session(ctx.repo.url) as db:
        due = list(db.execute(
            text(f"""
                SELECT s.id, s.clinic_id FROM sessions s JOIN clinics c ON c.id = s.clinic_id
                WHERE s.status = 'ready' AND s.transcript_expired_at IS NULL AND s.finished_at IS NOT NULL
                  AND {DELETE_AFTER} < now()
                ORDER BY s.finished_at LIMIT :batch
            """),
            {"default_days": ctx.settings.transcript_retention_days, "batch": BATCH},
        ).all())
    for sid, clinic_id in due:
        _expire(ctx, sid, clinic_id)
        report.transcripts_expired += 1
    if due:
        log.info("transcripts_expired", count=len(due))


def _expire(ctx: RunContext, session_id: uuid.UUID, clinic_id: uuid.UUID) -> None:
    with db_session(ctx.repo.url) as db:
        # Guarded: a session withdrawn or already expired meanwhile is left as it is.
        done = db.execute(
            update(Session).where(Session.id == session_id, Session.status == "ready",
                                  Session.transcript_expired_at.is_(None))
            .values(raw_turns=None, published_turns=None, transcript_expired_at=text("now()"))
            .returning(Session.id)
        ).one_or_none()
        if done is None:
            return
        db.execute(delete(Transcript).where(Transcript.session_id == session_id))
        db.execute(delete(ReliabilitySuggestion).where(ReliabilitySuggestion.session_id == session_id))
        # A clinician's corrections quote the transcript too (text and original): they go with it.
        db.execute(delete(SegmentEdit).where(SegmentEdit.session_id == session_id))
        # Unsigned notes quote the transcript and go with it; signed notes keep their own retention.
        delete_unsigned(db, session_id)
        db.execute(insert(SessionEvent).values(session_id=session_id, run=0, kind="transcript_expired"))
        audit.record_system(db, "transcript_expired", session_id, clinic_id)
