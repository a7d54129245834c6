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

from sqlalchemy import func, insert, select

from verbatim import audit
from verbatim.db.engine import db_session
from verbatim.db.models import Session, SessionEvent
from verbatim.db.repo import Repo, queue_copies_deleted
from verbatim.durable import outbox
from verbatim.errors import NotFound, RecordUnavailable, SignedNotesBlock
from verbatim.notes.retention import unamended_signed
from verbatim.pipeline.cleanup import Cleanup
from verbatim.record import writer
from verbatim.reliability.streams import progress_key
from verbatim.states import SessionStatus, predecessors


def withdraw(repo: Repo, cleanup: Cleanup, session_id: uuid.UUID, actor: audit.Actor | None = None) -> bool:
    """Delete a session's words now, and its audio and vendor jobs via the outbox (idempotent).

    One transaction: the fence bump, the session row's lock, the check for signed notes, the
    delete of every word (``verbatim.record.writer.clear``) and the audit row. A note cannot be
    signed in between: signing locks the session row too. Raises SignedNotesBlock (nothing
    written) when a signed note that is not amended quotes the session. Returns False when the
    session was withdrawn already.
    """
    with db_session(repo.url) as db:
        # Lock order: the run row first (the fence bump), then the session.
        repo.runs.bump(db, session_id)
        status = db.execute(select(Session.status).where(Session.id == session_id).with_for_update()
                            ).scalar_one_or_none()
        if status is None:
            raise NotFound(f"session {session_id} does not exist")
        if status not in {s.value for s in predecessors(SessionStatus.DELETED)}:
            return False
        # Under the session's lock: a note signed a moment ago is seen; one being signed waits.
        blocking = unamended_signed(db, session_id)
        if blocking:
            raise SignedNotesBlock(blocking)
        try:
            # A withdrawn session keeps only what the audit needs: its id, therapist, clinic and times.
            writer.clear(db, session_id, "withdrawn", actor, "session_deleted", values={
                "status": SessionStatus.DELETED.value, "client_ids": [], "consent": None, "idempotency_key": None,
                "audio_sha256": "", "speaker_map": None, "failure_detail": None, "finished_at": func.now()})
        except RecordUnavailable:
            return False
        runs = repo.runs.count_in(db, session_id)
        db.execute(insert(SessionEvent).values(session_id=session_id, run=runs, kind="session_deleted"))
        queue_copies_deleted(db, session_id, "withdrawn", ledger=True)
        outbox.add(db, outbox.REDIS_DELETE, {"keys": [progress_key(session_id)]}, session_id)
    # Our own copy goes now, inside the request; the vendor's within a tick of the sweep process
    # (an API request must not wait on the vendor).
    cleanup.now(session_id, kinds=[outbox.FILE_DELETE, outbox.REDIS_DELETE])
    return True

