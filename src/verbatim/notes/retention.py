"""Signed notes are clinical records with a retention of their own; unsigned drafts go with the transcript.

- A signed note is kept until ``notes.retain_until`` (set at signing: the clinic's
  ``note_retention_days``, else ``VERBATIM_NOTE_RETENTION_DAYS``, counted from signing). It
  survives the transcript's retention and a withdrawal through its quote snapshots. Past it,
  the periodic sweep deletes the note, its versions and citations, with a session event and an
  audit row (scope ``system``), one transaction per note.
- An unsigned note (queued, drafting, draft, failed) quotes the transcript and is not a record
  yet: it is deleted with the transcript (retention or withdrawal), in that same transaction.
- Withdrawing a session that has a signed note needs an amendment of that note first (its
  reason says why): the API refuses the withdrawal otherwise (409 ``signed_note``).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import structlog
from sqlalchemy import delete, insert, select, text
from sqlalchemy.orm import Session as OrmSession

from verbatim import audit
from verbatim.db.engine import db_session
from verbatim.db.models import Note, NoteCitation, NoteVersion, SessionEvent
from verbatim.notes.states import NoteStatus

if TYPE_CHECKING:
    from verbatim.durable.services import Services

log = structlog.get_logger("verbatim.retention")

BATCH = 200


def _delete_notes(db: OrmSession, note_ids: list[uuid.UUID]) -> None:
    if not note_ids:
        return
    db.execute(delete(NoteCitation).where(NoteCitation.note_id.in_(note_ids)))
    db.execute(delete(NoteVersion).where(NoteVersion.note_id.in_(note_ids)))
    db.execute(delete(Note).where(Note.id.in_(note_ids)))


def delete_unsigned(db: OrmSession, session_id: uuid.UUID) -> int:
    """Delete the session's notes that are not signed (in the caller's transaction); returns how many."""
    ids = list(db.execute(select(Note.id).where(Note.session_id == session_id,
                                                Note.status != NoteStatus.SIGNED.value)).scalars())
    _delete_notes(db, ids)
    return len(ids)


def unamended_signed(db: OrmSession, session_id: uuid.UUID) -> list[uuid.UUID]:
    """Signed notes of the session whose current version is not an amendment (they block a withdrawal)."""
    return list(db.execute(text("""
        SELECT n.id FROM notes n
        LEFT JOIN note_versions v ON v.note_id = n.id AND v.version = n.version
        WHERE n.session_id = :sid AND n.status = 'signed' AND coalesce(v.kind, '') <> 'amendment'
    """), {"sid": session_id}).scalars())


def expire_signed_notes(ctx: Services, report: object) -> None:
    """Delete signed notes past their ``retain_until`` (database clock), at most BATCH per pass (``report``: unused)."""
    with db_session(ctx.repo.url) as db:
        due = list(db.execute(select(Note.id, Note.session_id, Note.clinic_id).where(
            Note.status == NoteStatus.SIGNED.value, Note.retain_until < text("now()"))
            .order_by(Note.retain_until).limit(BATCH)).all())
    for note_id, session_id, clinic_id in due:
        with db_session(ctx.repo.url) as db:
            _delete_notes(db, [note_id])
            db.execute(insert(SessionEvent).values(session_id=session_id, run=0, kind="note_expired",
                                                   detail={"note_id": str(note_id)}))
            audit.record_system(db, "note_expired", session_id, clinic_id, {"note_id": str(note_id)})
    if due:
        log.info("notes_expired", count=len(due))
