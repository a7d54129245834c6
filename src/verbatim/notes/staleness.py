"""A note and the record it was drafted from: stale drafts, and confirming a draft against the new record.

A note names the version of its client's record it was drafted from (``notes.transcript_version``).
A speaker fix, a segment correction or a reviewed suggestion moves the record to a new version
(``verbatim.record.writer``); a draft written from an older one is **stale**. A stale draft is
never signed (409 ``stale_note``) until it is drafted again or the clinician confirms it against
the current record: every citation is checked again — a cited turn now another participant's (or
gone) is dropped with its quote, so no other client's words stay in the note, and the sentence is
marked unsupported; a turn whose words changed has its quote refreshed and the sentence verified
again. The confirmation is a new version of the note (kind ``record_confirmed``).
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session as OrmSession

from verbatim.db.models import Note, NoteCitation, Transcript
from verbatim.notes.drafter import judge
from verbatim.notes.repo import NoteRepo
from verbatim.polish.split import THERAPIST


def record_version(db: OrmSession, note: Note) -> int | None:
    """The current version of the note's client's record (None: the record is gone)."""
    found = db.execute(select(Transcript.version).where(Transcript.session_id == note.session_id,
                                                        Transcript.client_id == note.client_id)).scalar_one_or_none()
    return None if found is None else int(found)


def is_stale(db: OrmSession, note: Note) -> bool:
    """True when the note was drafted from a version of its record that is no longer current."""
    if note.version == 0 or note.transcript_version is None:
        return False
    return record_version(db, note) != note.transcript_version


def confirm_record(db: OrmSession, repo: NoteRepo, note: Note, author: uuid.UUID) -> tuple[int, int]:
    """Check the draft's citations against the current record and write the result as a new version.

    In the caller's transaction (the session row and the note locked by the caller). Returns
    (the new note version, how many citations were dropped). Raises ValueError when the record
    is gone.
    """
    current = record_version(db, note)
    if current is None:
        raise ValueError("the note's record is gone")
    segments = db.execute(select(Transcript.segments).where(Transcript.session_id == note.session_id,
                                                            Transcript.client_id == note.client_id)).scalar_one()
    own = {s["id"]: s for s in segments if s.get("speaker") in (THERAPIST, note.client_id)}
    body = repo.current_body(db, note)
    dropped: set[str] = set()
    sections = []
    for section in body.get("sections", []):
        sentences = []
        for sentence in section.get("sentences", []):
            kept, moved = [], False
            for cite in sentence.get("citations", []):
                seg = own.get(cite.get("segment_id"))
                if seg is None:
                    moved = True
                    dropped.add(str(cite.get("segment_id")))
                    continue
                kept.append({**cite, "speaker": seg["speaker"], "quote": cite["quote"]
                             if cite["quote"] in seg["text"] else seg["text"]})
            out: dict[str, Any] = {**sentence, "citations": kept}
            if moved:
                # Its evidence now belongs to someone else: nothing in this client's record supports it.
                out.update(label="unsupported", support=0.0, record_moved=True)
            elif kept != sentence.get("citations", []):
                out.update(judge(out["text"], kept))
            sentences.append(out)
        sections.append({**section, "sentences": sentences})
    if dropped:
        db.execute(delete(NoteCitation).where(NoteCitation.note_id == note.id,
                                              NoteCitation.segment_id.in_(sorted(dropped))))
    version = repo.add_version(db, note, {**body, "sections": sections}, "record_confirmed", author)
    note.transcript_version = current
    return version, len(dropped)
