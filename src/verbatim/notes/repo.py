"""Every database operation of notes. Writes of a note run are fenced on ``durable_runs`` (kind ``note``).

Lock order, as everywhere: the ``durable_runs`` row first (``RunStore.hold``), then the note's rows.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session as OrmSession

from verbatim.db.engine import db_session
from verbatim.db.models import (
    Note,
    NoteCitation,
    NoteTemplate,
    NoteVersion,
    Session,
    SessionEvent,
    Therapist,
    Transcript,
)
from verbatim.durable.store import RunStore
from verbatim.errors import IllegalTransition, NotFound, RecordMoved
from verbatim.notes.formats import Section, sections_of
from verbatim.notes.note_risk import recheck
from verbatim.notes.render import diff, plain_text
from verbatim.notes.states import RUNNABLE, NoteStatus
from verbatim.record.writer import version as record_version

NOTE = "note"


@dataclass(frozen=True)
class NoteState:
    """What a note run reads when it is counted: the client's record, the sections, the checkpoint."""

    session_id: uuid.UUID
    client_id: str
    segments: list[dict[str, Any]]
    transcript_version: int
    sections: tuple[Section, ...]
    done: list[dict[str, Any]]  #: sections already written (the checkpoint), in order
    known_names: tuple[str, ...] = ()  #: the session's client ids and the therapist's name (kept from a model)
    gone: str | None = None  #: the client's record was deleted (retention, withdrawal): nothing to draft from


class NoteRepo:
    """Note operations over one database URL; ``runs`` is the ``note`` kind's RunStore."""

    def __init__(self, database_url: str):
        self.url = database_url
        self.runs = RunStore(database_url, NOTE)

    def runnable(self, note_ids: list[uuid.UUID]) -> set[uuid.UUID]:
        """Which of these notes a run still has work on (queued or drafting) — one query, for the sweep."""
        with db_session(self.url) as db:
            return set(db.execute(select(Note.id).where(
                Note.id.in_(note_ids), Note.status.in_([s.value for s in RUNNABLE]))).scalars())

    # --- the run's reads and fenced writes ---------------------------------------------
    def load(self, db: OrmSession, note_id: uuid.UUID) -> NoteState | None:
        """The note's state for a run (None when it has nothing to do: drafted, signed, failed, gone)."""
        note = db.get(Note, note_id)
        if note is None or note.status not in {s.value for s in RUNNABLE}:
            return None
        record = db.execute(
            select(Transcript.segments, Transcript.version)
            .where(Transcript.session_id == note.session_id, Transcript.client_id == note.client_id)
        ).one_or_none()
        if record is None:
            # Queued or drafting, and its record deleted: the run fails it (``subject_gone``), never
            # leaves it waiting for ever.
            return NoteState(note.session_id, note.client_id, [], 0, (), [],
                             gone="the client's record was deleted (retention or withdrawal)")
        template = None
        if note.template_id is not None:
            template = db.execute(select(NoteTemplate.sections).where(NoteTemplate.id == note.template_id)
                                  ).scalar_one()
        # Sections drafted from an older transcript version are not resumed: the note restarts.
        done = list(note.sections or []) if note.transcript_version in (None, record.version) else []
        names = db.execute(select(Session.client_ids, Therapist.name)
                           .join(Therapist, Therapist.id == Session.therapist_id)
                           .where(Session.id == note.session_id)).one()
        return NoteState(note.session_id, note.client_id, list(record.segments), int(record.version),
                         sections_of(note.format, template), done, (*names.client_ids, names.name))

    def _fenced(self, db: OrmSession, note_id: uuid.UUID, fence: int, **values: Any) -> None:
        self.runs.hold(db, note_id, fence)
        done = db.execute(
            update(Note).where(Note.id == note_id, Note.status.in_([s.value for s in RUNNABLE]))
            .values(updated_at=func.now(), **values).returning(Note.id)
        ).one_or_none()
        if done is None:
            raise IllegalTransition(f"note {note_id} is no longer being drafted")

    def _same_record(self, db: OrmSession, note_id: uuid.UUID, transcript_version: int) -> None:
        """Raise RecordMoved unless the note's record is still at ``transcript_version``.

        Read under a share lock of the session row (after the run row's, the lock order): no
        change of the record commits between this check and the caller's fenced write.
        """
        session_id, client_id = db.execute(select(Note.session_id, Note.client_id).where(Note.id == note_id)).one()
        now = record_version(db, session_id, client_id)
        if now != transcript_version:
            raise RecordMoved(f"the record of note {note_id} moved from version {transcript_version} to {now}")

    def save_section(self, note_id: uuid.UUID, fence: int, index: int, section: dict[str, Any],
                     writer: str, transcript_version: int) -> None:
        """Checkpoint section ``index`` (fenced): the sections written so far plus this one → drafting.

        Raises RecordMoved (nothing written) when the record is no longer at ``transcript_version``.
        """
        with db_session(self.url) as db:
            self.runs.hold(db, note_id, fence)
            self._same_record(db, note_id, transcript_version)
            done = list(db.execute(select(Note.sections).where(Note.id == note_id)).scalar_one() or [])
            self._fenced(db, note_id, fence, sections=[*done[:index], section],
                         status=NoteStatus.DRAFTING.value, writer=writer, transcript_version=transcript_version)

    def finish(self, note_id: uuid.UUID, fence: int, run: int, session_id: uuid.UUID,
               risk: dict[str, Any], transcript_version: int) -> None:
        """Write version 1 (the draft), its citations and the risk flags; → draft. One transaction, fenced.

        Raises RecordMoved (nothing written) when the record is no longer at ``transcript_version``.
        """
        with db_session(self.url) as db:
            self.runs.hold(db, note_id, fence)
            self._same_record(db, note_id, transcript_version)
            sections = list(db.execute(select(Note.sections).where(Note.id == note_id)).scalar_one() or [])
            # The draft's own words are checked as an edit's are: a box never says "nothing detected" over a
            # note that quotes a risk statement (the record's flags stay as the record's check found them).
            body = {"sections": sections, "risk": recheck(risk, sections)}
            self._fenced(db, note_id, fence, status=NoteStatus.DRAFT.value, risk_flags=risk, version=1,
                         transcript_version=transcript_version)
            db.execute(insert(NoteVersion).values(note_id=note_id, version=1, kind="draft", body=body, diff=""))
            for section in sections:
                for n, sentence in enumerate(section.get("sentences", [])):
                    for c in sentence.get("citations", []):
                        db.execute(insert(NoteCitation).values(
                            note_id=note_id, section=section["name"], sentence=n, segment_id=c["segment_id"],
                            speaker=c["speaker"], start_s=c["start_s"], end_s=c["end_s"], quote=c["quote"]))
            db.execute(insert(SessionEvent).values(session_id=session_id, run=run, kind="note_drafted",
                                                   detail={"note_id": str(note_id)}))

    def fail(self, note_id: uuid.UUID, fence: int, run: int, session_id: uuid.UUID, code: str) -> None:
        """Record a terminal failure of the note run (fenced) with its named code."""
        with db_session(self.url) as db:
            self._fenced(db, note_id, fence, status=NoteStatus.FAILED.value, failure_code=code)
            db.execute(insert(SessionEvent).values(session_id=session_id, run=run, kind="note_failed",
                                                   failure_code=code, detail={"note_id": str(note_id)}))

    def add_event(self, session_id: uuid.UUID, run: int, kind: str, failure_code: str | None,
                  detail: dict[str, Any]) -> None:
        """Append an event of a note run to its session's history (not fenced)."""
        with db_session(self.url) as db:
            db.execute(insert(SessionEvent).values(session_id=session_id, run=run, kind=f"note_{kind}",
                                                   failure_code=failure_code, detail=detail))

    # --- review (API) -------------------------------------------------------------------
    def get(self, db: OrmSession, note_id: uuid.UUID, therapist_id: uuid.UUID | None) -> Note:
        """The note, FOR UPDATE; NotFound when it does not exist or is another therapist's (when given)."""
        stmt = select(Note).where(Note.id == note_id).with_for_update()
        if therapist_id is not None:
            stmt = stmt.where(Note.therapist_id == therapist_id)
        note = db.execute(stmt).scalar_one_or_none()
        if note is None:
            raise NotFound(f"note {note_id} does not exist")
        return note

    def current_body(self, db: OrmSession, note: Note) -> dict[str, Any]:
        """The body of the note's current version (empty sections before it is drafted)."""
        if note.version == 0:
            return {"sections": list(note.sections or []), "risk": note.risk_flags}
        return dict(db.execute(select(NoteVersion.body).where(NoteVersion.note_id == note.id,
                                                              NoteVersion.version == note.version)).scalar_one())

    def add_version(self, db: OrmSession, note: Note, body: dict[str, Any], kind: str, author: uuid.UUID | None,
                    reason: str | None = None) -> int:
        """Append the next version (with its diff against the current one) and make it current."""
        before = plain_text(self.current_body(db, note))
        version = note.version + 1
        db.execute(insert(NoteVersion).values(note_id=note.id, version=version, kind=kind, body=body,
                                              diff=diff(before, plain_text(body), note.version, version),
                                              reason=reason, author_id=author))
        note.version = version
        note.updated_at = func.now()
        return version

    def sign(self, note: Note, signer: uuid.UUID, cosign: bool, retain_until: datetime | None) -> None:
        """Sign (or co-sign) in the caller's transaction; raises IllegalTransition when not allowed."""
        if cosign:
            if note.status != NoteStatus.SIGNED.value or not note.requires_cosign or note.cosigned_at is not None:
                raise IllegalTransition("only a signed trainee note awaiting its co-signature can be co-signed")
            note.cosigned_by, note.cosigned_at = signer, func.now()
            return
        if note.status != NoteStatus.DRAFT.value:
            raise IllegalTransition(f"a note can be signed once drafted and only once (it is {note.status})")
        note.status = NoteStatus.SIGNED.value
        note.signed_by, note.signed_at = signer, func.now()
        note.retain_until = retain_until
