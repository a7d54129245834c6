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
from sqlalchemy import insert, text

from verbatim.db.engine import db_session
from verbatim.db.models import SessionEvent
from verbatim.errors import RecordUnavailable
from verbatim.record import writer

if TYPE_CHECKING:
    from verbatim.context import ProcessContext
    from verbatim.pipeline.sweeps import SweepReport

log = structlog.get_logger("verbatim.retention")

BATCH = 200

#: SQL for "the moment this session's transcript is due for deletion" (sessions s JOIN clinics c)
DELETE_AFTER = "s.finished_at + make_interval(days => coalesce(c.transcript_retention_days, :default_days))"


def expire_transcripts(ctx: ProcessContext, report: SweepReport) -> None:
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


def _expire(ctx: ProcessContext, session_id: uuid.UUID, clinic_id: uuid.UUID) -> None:
    with db_session(ctx.repo.url) as db:
        try:
            # Under the session's lock: a session withdrawn or already expired meanwhile is left as it is,
            # and a change of the record waiting on the lock finds it expired and is refused.
            writer.clear(db, session_id, "expired", None, "transcript_expired", only_ready=True,
                         values={"transcript_expired_at": text("now()")})
        except RecordUnavailable:
            return
        db.execute(insert(SessionEvent).values(session_id=session_id, run=0, kind="transcript_expired"))
