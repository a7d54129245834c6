"""A therapist withdraws a session: mark it deleted (fenced), and queue the delete of every copy.

The withdrawal takes a fencing token of its own (bumping the capture run's ``fence`` without
counting a run), so a capture run still working on the session loses its fence and stops at
its next write. The same transaction queues, in the outbox, the delete of our audio, of every
vendor job the ledger knows, of the session's job and of any job the vendor lists with the
session's tag: then they are tried at once, and retried by the sweep process until done — the
local audio goes even when the vendor is down. The session row keeps only what the audit needs
(id, therapist, clinic, times): client ids, consent, the audio digest and the idempotency key go;
so does the analysis progress hash in Redis.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from sqlalchemy import delete, func, insert, update
from sqlalchemy.orm import Session as OrmSession

from verbatim.db.engine import db_session
from verbatim.db.models import SegmentEdit, Session, SessionEvent, Transcript
from verbatim.db.repo import Repo, queue_copies_deleted
from verbatim.durable import outbox
from verbatim.pipeline.cleanup import Cleanup
from verbatim.reliability.models import ReliabilitySuggestion
from verbatim.reliability.streams import progress_key
from verbatim.states import SessionStatus, predecessors


def withdraw(repo: Repo, cleanup: Cleanup, session_id: uuid.UUID,
             record: Callable[[OrmSession], None] | None = None) -> None:
    """Delete a session's checkpoint and transcripts now, and its audio and vendor jobs via the outbox (idempotent).

    ``record`` writes the audit row in the same transaction: no withdrawal commits without it.
    """
    with db_session(repo.url) as db:
        # Lock order: the run row first (the fence bump), then the session.
        repo.runs.bump(db, session_id)
        row = db.execute(
            update(Session)
            .where(Session.id == session_id,
                   Session.status.in_([s.value for s in predecessors(SessionStatus.DELETED)]))
            # A withdrawn session keeps only what the audit needs: its id, therapist, clinic and times.
            .values(status=SessionStatus.DELETED.value, raw_turns=None, published_turns=None,
                    client_ids=[], consent=None, idempotency_key=None, audio_sha256="", speaker_map=None,
                    failure_detail=None, updated_at=func.now(), finished_at=func.now())
            .returning(Session.id)
        ).one_or_none()
        db.execute(delete(Transcript).where(Transcript.session_id == session_id))
        # Suggestions quote the transcript: they go with it (their action rows hold no text and stay).
        db.execute(delete(ReliabilitySuggestion).where(ReliabilitySuggestion.session_id == session_id))
        # A clinician's corrections quote the transcript too (text and original): they go with it.
        db.execute(delete(SegmentEdit).where(SegmentEdit.session_id == session_id))
        if row is not None:
            runs = repo.runs.count_in(db, session_id)
            db.execute(insert(SessionEvent).values(session_id=session_id, run=runs, kind="session_deleted"))
            queue_copies_deleted(db, session_id, "withdrawn", ledger=True)
            outbox.add(db, outbox.REDIS_DELETE, {"keys": [progress_key(session_id)]}, session_id)
        if record is not None:
            record(db)
    # Our own copy goes now, inside the request; the vendor's within a tick of the sweep process
    # (an API request must not wait on the vendor).
    cleanup.now(session_id, kinds=[outbox.FILE_DELETE, outbox.REDIS_DELETE])
