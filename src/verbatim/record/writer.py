"""The one writer of the published record. Every door that changes it comes through here.

A change, in the caller's transaction:

1. lock the session row (``SELECT … FOR UPDATE``): two changes of one session run one after
   the other, and a withdrawal or retention delete either commits before (the change is then
   refused) or waits for it;
2. refuse a record that cannot change (``RecordUnavailable``: ``session_withdrawn``,
   ``transcript_expired``, ``not_ready``) — nothing is written;
3. the door's own write (``apply``: the speaker mapping, a correction row, a suggestion's move,
   the publish step's base turns);
4. rebuild every client's record from the one source (``verbatim.record.build``) and write it:
   ``sessions.published_turns`` and one ``transcripts`` row per client, all at the next record
   version (a note names the version it was drafted from; a newer one makes it stale);
5. the audit row, filed under the data's clinic, with no client id or word in its detail.

Withdrawal and retention clear the record through ``clear`` (same lock, same refusal, same
audit). Lock order, as everywhere: a ``durable_runs`` row (a run's fenced write, a withdrawal's
fence bump) before the session row; a note's rows after the session row.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.orm import Session as OrmSession

from verbatim import audit
from verbatim.db.models import SegmentEdit, Session, Transcript
from verbatim.errors import NotFound, RecordUnavailable
from verbatim.notes.retention import delete_unsigned
from verbatim.polish.base import Turn
from verbatim.record.build import APPLIED_STATUSES, Built, Source, build
from verbatim.reliability.models import ReliabilitySuggestion
from verbatim.states import SessionStatus

Apply = Callable[[OrmSession, Session], None]


def lock(db: OrmSession, session_id: uuid.UUID) -> Session:
    """The session row, locked FOR UPDATE for ``db``'s transaction; NotFound when there is none."""
    row = db.execute(select(Session).where(Session.id == session_id).with_for_update()).scalar_one_or_none()
    if row is None:
        raise NotFound(f"session {session_id} does not exist")
    return row


def refuse_closed(row: Session) -> None:
    """Raise RecordUnavailable unless ``row``'s record is published and may change."""
    if row.status == SessionStatus.DELETED.value:
        raise RecordUnavailable("session_withdrawn", "the session was withdrawn: its transcript is gone")
    if row.transcript_expired_at is not None:
        raise RecordUnavailable("transcript_expired",
                                f"the transcript was deleted on {row.transcript_expired_at:%Y-%m-%d}: its clinic's "
                                "retention window had passed")
    if row.status != SessionStatus.READY.value or row.raw_turns is None:
        raise RecordUnavailable("not_ready", f"the transcript is not published yet (status {row.status})")


def change(db: OrmSession, session_id: uuid.UUID, actor: audit.Actor | None, action: str,
           detail: dict[str, Any] | None = None, apply: Apply | None = None) -> Built:
    """Change a session's record through one door (the steps in the module docstring); returns it rebuilt.

    ``actor`` None: Verbatim's own act (audited with scope ``system``). ``apply`` may raise to
    refuse the change (nothing is written: the caller's transaction rolls back). Raises
    NotFound, RecordUnavailable.
    """
    row = lock(db, session_id)
    refuse_closed(row)
    if apply is not None:
        apply(db, row)
        db.flush()
    built = _rebuild(db, row)
    _audit(db, row, actor, action, detail)
    return built


def publish(db: OrmSession, session_id: uuid.UUID, base: list[Turn], polished: bool) -> Built:
    """The capture run's publish, inside its fenced transaction (which has just marked the session ready).

    ``base``: the rendered turns (polished text, speaker label, role), one per raw turn — the
    base every later change rebuilds from.
    """
    def keep_base(db: OrmSession, row: Session) -> None:
        db.execute(update(Session).where(Session.id == row.id).values(polished_turns=base, polished=polished))
        row.polished_turns, row.polished = base, polished

    return change(db, session_id, None, "transcript_published", None, keep_base)


def version(db: OrmSession, session_id: uuid.UUID, client_id: str) -> int | None:
    """The current version of ``client_id``'s record (None: no record), read under a share lock of the
    session row, so no change of the record commits between this read and the caller's commit."""
    found = db.execute(
        select(Transcript.version).join(Session, Session.id == Transcript.session_id)
        .where(Transcript.session_id == session_id, Transcript.client_id == client_id,
               Session.status == SessionStatus.READY.value, Session.transcript_expired_at.is_(None))
        .with_for_update(read=True, of=Session)
    ).scalar_one_or_none()
    return None if found is None else int(found)


def clear(db: OrmSession, session_id: uuid.UUID, reason: str, actor: audit.Actor | None, action: str,
          *, only_ready: bool = False, values: dict[str, Any] | None = None) -> Session:
    """Delete every word of the session's record, in ``db``'s transaction: the turns, the per-client
    records, the suggestions, the corrections and the unsigned notes (signed notes keep their own
    retention). ``values``: more columns the same UPDATE sets (a withdrawal's status and what it forgets).

    Refuses a withdrawn session, an expired transcript and — ``only_ready`` (retention) — one
    that is not ready, with RecordUnavailable. ``reason`` is for the logs and events of the caller.
    """
    row = lock(db, session_id)
    if row.status == SessionStatus.DELETED.value:
        raise RecordUnavailable("session_withdrawn", "the session was withdrawn already")
    if row.transcript_expired_at is not None and only_ready:
        raise RecordUnavailable("transcript_expired", "the transcript was deleted under retention already")
    if only_ready and row.status != SessionStatus.READY.value:
        raise RecordUnavailable("not_ready", f"the session is {row.status}")
    db.execute(update(Session).where(Session.id == session_id).values(
        raw_turns=None, published_turns=None, polished_turns=None, updated_at=func.now(), **(values or {})))
    db.execute(delete(Transcript).where(Transcript.session_id == session_id))
    # Suggestions quote the transcript: they go with it (their action rows hold no text and stay).
    db.execute(delete(ReliabilitySuggestion).where(ReliabilitySuggestion.session_id == session_id))
    # A clinician's corrections quote the transcript too (text and original): they go with it.
    db.execute(delete(SegmentEdit).where(SegmentEdit.session_id == session_id))
    # Drafts quote the transcript: they go with it; a signed note is a clinical record of its own.
    delete_unsigned(db, session_id)
    _audit(db, row, actor, action, None)
    return row


def _source(db: OrmSession, row: Session) -> Source:
    assert row.raw_turns is not None
    applied: list[ReliabilitySuggestion] = []
    unapplied: list[ReliabilitySuggestion] = []
    for s in db.execute(select(ReliabilitySuggestion).where(ReliabilitySuggestion.session_id == row.id)
                        .order_by(ReliabilitySuggestion.created_at, ReliabilitySuggestion.id)).scalars():
        (applied if s.status in APPLIED_STATUSES else unapplied).append(s)
    corrections: dict[int, str] = {}
    for index, text in db.execute(select(SegmentEdit.turn_index, SegmentEdit.text)
                                  .where(SegmentEdit.session_id == row.id).order_by(SegmentEdit.id)):
        corrections[index] = text
    # A record published before its base was kept: the published turns are the best base there is.
    base = row.polished_turns if row.polished_turns is not None else row.published_turns
    return Source(raw_turns=list(row.raw_turns), base_turns=base, client_ids=list(row.client_ids),
                  session_type=row.session_type, speaker_map=row.speaker_map, applied=applied,
                  unapplied=unapplied, corrections=corrections)


def _rebuild(db: OrmSession, row: Session) -> Built:
    built = build(_source(db, row))
    db.execute(update(Session).where(Session.id == row.id).values(published_turns=built.shown,
                                                                  updated_at=func.now()))
    existing = {r.client_id: r for r in db.execute(select(Transcript).where(Transcript.session_id == row.id)
                                                   ).scalars()}
    # One version for the whole record: every client's record moves to it together.
    next_version = max((r.version for r in existing.values()), default=0) + 1
    polished = bool(row.polished)
    for client_id, segments in built.records.items():
        if client_id in existing:
            db.execute(update(Transcript).where(Transcript.id == existing[client_id].id)
                       .values(segments=segments, version=next_version, polished=polished))
        else:
            db.execute(insert(Transcript).values(session_id=row.id, client_id=client_id, segments=segments,
                                                 polished=polished, version=next_version))
    stale = [cid for cid in existing if cid not in built.records]
    if stale:
        db.execute(delete(Transcript).where(Transcript.session_id == row.id, Transcript.client_id.in_(stale)))
    db.expire(row)
    return built


def _audit(db: OrmSession, row: Session, actor: audit.Actor | None, action: str,
           detail: dict[str, Any] | None) -> None:
    if actor is None:
        audit.record_system(db, action, row.id, row.clinic_id, detail)
    else:
        audit.record(db, actor, action, row.id, detail)
