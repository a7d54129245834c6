"""Free-text correction of one transcript segment, and its history (the original kept).

``PUT /v1/sessions/{id}/segments/{segment_id}`` ``{"text": …, "client_id": …}`` replaces the
words of one segment (``seg-{n}``, the n-th recognized turn) in the published turns and in every
client record that shows them, and bumps those records' ``version``. Segment ids do not move, so
a note's citations keep pointing at the same turn (and keep their own quote snapshots). The text
before the correction is kept in ``segment_edits``; ``GET …/segments/{segment_id}`` shows it.
Each correction writes its audit row in the transaction that makes it.

The session's own therapist only (404 for anyone else, as for sessions). Errors: 404 unknown
segment; 422 empty or longer than 4 000 characters, unchanged, a client not in the session, or
a segment that is another participant's in that client's record; 409 session not ready;
410 transcript deleted under retention. Nothing is written when a correction is refused.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy import select
from sqlalchemy.orm import Session as OrmSession

from verbatim import audit
from verbatim.api.deps import ActorDep, PrincipalDep, ServicesDep
from verbatim.api.errors import ApiError
from verbatim.api.sessions import _load_own
from verbatim.db.engine import db_session
from verbatim.db.models import SegmentEdit, Session, Transcript
from verbatim.errors import NotFound
from verbatim.free_text import FREE_TEXT, ONE_LINE
from verbatim.record import writer

router = APIRouter(tags=["sessions"])

#: the longest corrected segment, in characters (an hour's longest turn is far shorter)
MAX_SEGMENT_CHARS = 4000
OTHER = "other participant"
_SEGMENT_ID = re.compile(r"seg-(\d{1,6})")


class SegmentCorrection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_SEGMENT_CHARS),
                    FREE_TEXT] = Field(description="The segment's corrected words (1–4 000 characters)")
    client_id: Annotated[str, ONE_LINE] | None = Field(None, max_length=200,
                                  description="The client record the segment was read in (checked when given)")


class EditOut(BaseModel):
    original: str
    text: str
    author_id: uuid.UUID
    created_at: datetime


class SegmentHistory(BaseModel):
    session_id: uuid.UUID
    segment_id: str
    #: the segment's words now
    text: str
    #: the words before any clinician's correction (the recognizer's, with applied suggestions)
    original: str
    corrected: bool
    #: client id → that client's transcript version (only records showing this segment's words)
    transcript_versions: dict[str, int]
    edits: list[EditOut]


def _index(segment_id: str) -> int:
    match = _SEGMENT_ID.fullmatch(segment_id)
    if match is None:
        raise NotFound(f"no segment {segment_id!r}: segment ids look like seg-12")
    return int(match.group(1))


def _ready(db: OrmSession, session_id: uuid.UUID, index: int, segment_id: str) -> Session:
    """The session row, locked, once it has a published turn ``index`` (409/410/404 otherwise)."""
    row = writer.lock(db, session_id)
    writer.refuse_closed(row)
    if not 0 <= index < len(row.published_turns or []):
        raise NotFound(f"no segment {segment_id} in session {session_id}")
    return row


def _history(db: OrmSession, row: Session, index: int, segment_id: str) -> SegmentHistory:
    edits = list(db.execute(select(SegmentEdit).where(SegmentEdit.session_id == row.id,
                                                      SegmentEdit.turn_index == index).order_by(SegmentEdit.id)
                            ).scalars())
    text = str((row.published_turns or [])[index]["text"])
    versions = {r.client_id: r.version for r in db.execute(select(Transcript).where(Transcript.session_id == row.id)
                                                             ).scalars()
                if index < len(r.segments) and r.segments[index].get("speaker") != OTHER}
    return SegmentHistory(session_id=row.id, segment_id=segment_id, text=text,
                          original=edits[0].original if edits else text, corrected=bool(edits),
                          transcript_versions=versions,
                          edits=[EditOut(original=e.original, text=e.text, author_id=e.author_id,
                                         created_at=e.created_at) for e in edits])


@router.put("/v1/sessions/{session_id}/segments/{segment_id}", response_model=SegmentHistory)
def correct_segment(session_id: uuid.UUID, segment_id: str, body: SegmentCorrection, svc: ServicesDep,
                    who: PrincipalDep, actor: ActorDep) -> SegmentHistory:
    """Replace one segment's words: a new version of the record; the original kept. Audited (no words, no client id)."""
    therapist = _load_own(svc, who, session_id).therapist_id
    index = _index(segment_id)

    def correct(db: OrmSession, row: Session) -> None:
        if not 0 <= index < len(row.published_turns or []):
            raise NotFound(f"no segment {segment_id} in session {session_id}")
        if body.client_id is not None:
            shown = db.execute(select(Transcript.segments).where(
                Transcript.session_id == session_id, Transcript.client_id == body.client_id)).scalar_one_or_none()
            if shown is None:
                raise ApiError(422, "client_not_in_session", f"{body.client_id!r} is not a client of this session")
            if index >= len(shown) or shown[index].get("speaker") == OTHER:
                raise ApiError(422, "not_in_record", f"{segment_id} is another participant's turn in "
                                                     f"{body.client_id}'s record: correct it where it is shown")
        before = str((row.published_turns or [])[index]["text"])
        if before == body.text:
            raise ApiError(422, "unchanged", "the text is the segment's text already: change a word, then save")
        db.add(SegmentEdit(session_id=session_id, turn_index=index, original=before, text=body.text,
                           author_id=therapist))

    with db_session(svc.repo.url) as db:
        writer.change(db, session_id, actor, "segment_corrected", {"segment_id": segment_id}, correct)
        db.flush()
        row = db.get(Session, session_id)
        assert row is not None
        return _history(db, row, index, segment_id)


@router.get("/v1/sessions/{session_id}/segments/{segment_id}", response_model=SegmentHistory)
def segment_history(session_id: uuid.UUID, segment_id: str, svc: ServicesDep, who: PrincipalDep,
                    actor: ActorDep) -> SegmentHistory:
    """One segment's words now, its original and each correction (who, when). Audited."""
    _load_own(svc, who, session_id)
    index = _index(segment_id)
    with db_session(svc.repo.url) as db:
        row = _ready(db, session_id, index, segment_id)
        audit.record(db, actor, "segment_history_read", session_id, {"segment_id": segment_id})
        return _history(db, row, index, segment_id)


def originals(db: OrmSession, session_id: uuid.UUID) -> dict[int, str]:
    """Turn index → its words before the first correction, for every corrected segment of the session."""
    found: dict[int, str] = {}
    for index, original in db.execute(select(SegmentEdit.turn_index, SegmentEdit.original)
                                      .where(SegmentEdit.session_id == session_id).order_by(SegmentEdit.id)):
        found.setdefault(index, original)
    return found
