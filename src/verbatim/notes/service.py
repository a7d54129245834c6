"""Requesting notes: validate, insert the note and its run's due time in one transaction, then enqueue.

Bad input raises NoteRequestInvalid before anything is written or enqueued. The message is
sent only after the commit (a run that started earlier would find no note); if the broker is
down, the due time (``stall_s`` away) brings the note to the sweep.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session as OrmSession

from verbatim.config import Settings
from verbatim.db.models import Note, NoteTemplate, Session, Therapist, Transcript
from verbatim.errors import NoteRequestInvalid
from verbatim.notes.formats import BUILT_IN, CLINICAL
from verbatim.notes.repo import NoteRepo
from verbatim.states import SessionStatus


@dataclass(frozen=True)
class Requested:
    """A note inserted (not yet enqueued)."""

    note_id: uuid.UUID
    session_id: uuid.UUID
    client_id: str


def resolve_format(db: OrmSession, fmt: str, clinic_id: uuid.UUID, *, allow_bench: bool = False) -> uuid.UUID | None:
    """The template id ``fmt`` names (None for a built-in format); raises NoteRequestInvalid."""
    name = fmt.strip().lower()
    if name in CLINICAL or (allow_bench and name in BUILT_IN):
        return None
    try:
        template_id = uuid.UUID(fmt)
    except ValueError:
        template_id = None
    if template_id is not None and db.execute(select(NoteTemplate.id).where(
            NoteTemplate.id == template_id, NoteTemplate.clinic_id == clinic_id)).first() is not None:
        return template_id
    raise NoteRequestInvalid("unknown_format",
                             f"unknown note format {fmt!r}: use one of {', '.join(CLINICAL)} or a template id "
                             "of your clinic (POST /v1/templates)")


def request_note(db: OrmSession, settings: Settings, session: Session, fmt: str, client_id: str | None,
                 batch_id: uuid.UUID | None = None) -> Requested:
    """Insert a queued note of ``client_id`` (default: the session's only client) in ``db``'s transaction,
    holding the session row (FOR UPDATE) until it commits.

    Raises NoteRequestInvalid: ``unknown_format``, ``client_not_in_session`` (or missing for a
    session with several clients), ``not_ready``, ``transcript_expired``, ``no_client_speech`` (the
    client's record holds none of their words: every voice is unassigned or another's).
    """
    # The session row locked and read again: a retention pass or a withdrawal (each an UPDATE of this row
    # that deletes the record and the unsigned notes) either committed before — and is seen below — or
    # waits for this note to commit and then deletes it too. Never a queued note without its record.
    db.refresh(session, with_for_update=True)
    template_id = resolve_format(db, fmt, session.clinic_id)
    if client_id is None:
        if len(session.client_ids) != 1:
            raise NoteRequestInvalid("client_not_in_session",
                                     f"this session has {len(session.client_ids)} clients: name one with client_id "
                                     "(one note per client)")
        client_id = session.client_ids[0]
    if client_id not in session.client_ids:
        raise NoteRequestInvalid("client_not_in_session", "client_id is not one of this session's clients")
    if session.transcript_expired_at is not None:
        raise NoteRequestInvalid("transcript_expired", "the transcript was deleted by its clinic's retention")
    record = db.execute(select(Transcript.segments).where(
        Transcript.session_id == session.id, Transcript.client_id == client_id)).first()
    if session.status != SessionStatus.READY.value or record is None:
        raise NoteRequestInvalid("not_ready", f"the transcript is not published yet (status {session.status})")
    # A draft of a record with none of the client's words would say "no evidence" and "risk flags:
    # none found" about speech nobody has tied to the client yet: refuse until the speakers are named.
    if not any(seg.get("speaker") == client_id for seg in record[0] or []):
        raise NoteRequestInvalid("no_client_speech",
                                 f"no turn of this session is assigned to {client_id} yet: name the speakers "
                                 "(PUT /v1/sessions/{id}/speakers or the session page), then ask for the note")
    cosign = db.execute(select(Therapist.requires_cosign).where(Therapist.id == session.therapist_id)).scalar_one()
    note = Note(id=uuid.uuid4(), session_id=session.id, clinic_id=session.clinic_id,
                therapist_id=session.therapist_id, client_id=client_id,
                format=str(template_id) if template_id else fmt.strip().lower(), template_id=template_id,
                batch_id=batch_id, requires_cosign=cosign)
    db.add(note)
    db.flush()
    # Due after the stall window: if the message below is lost, the sweep sends another.
    NoteRepo(settings.database_url or "").runs.ensure(db, note.id, settings.note_deadline_s, settings.stall_s)
    return Requested(note.id, session.id, client_id)
