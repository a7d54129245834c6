"""Every database operation of the capture run, each one statement or one transaction.

Writes made by a run are *fenced*: ``UPDATE sessions … WHERE id = :id AND fence = :token``.
Zero rows means a newer run took the session (FenceLost) and this run must stop at once.
The fencing token lives in PostgreSQL, so a flushed Redis cannot reset it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session as OrmSession

from verbatim.db.engine import db_session
from verbatim.db.models import Session, SessionEvent, VendorSubmission
from verbatim.durable import outbox
from verbatim.durable.store import RunStore
from verbatim.errors import FenceLost, IllegalTransition, NotFound
from verbatim.record import writer
from verbatim.reliability.sweep import record_request
from verbatim.states import ACTIVE, SessionStatus, predecessors
from verbatim.telemetry import metrics

CAPTURE = "capture"


@dataclass(frozen=True)
class CaptureState:
    """What a capture run reads when it is counted: the checkpoint and what it needs to resume."""

    status: SessionStatus
    audio_path: str | None
    vendor_job_id: str | None
    job_age_s: float | None  #: seconds since the saved vendor job was submitted (database clock)
    raw_turns: list[dict[str, Any]] | None
    client_ids: list[str]
    speaker_map: dict[str, str] | None
    session_type: str


class Repo:
    """Database operations of the capture run over one PostgreSQL URL (engine per process)."""

    def __init__(self, database_url: str, *, webhooks: bool = False):
        self.url = database_url
        self.runs = RunStore(database_url, CAPTURE)
        self.webhooks = webhooks  #: queue a webhook notification with every terminal status

    def load(self, db: OrmSession, session_id: uuid.UUID) -> CaptureState | None:
        """The session's checkpoint, read in the run's counting transaction; None without outstanding work."""
        row = db.execute(
            select(Session.status, Session.audio_path, Session.vendor_job_id, Session.raw_turns,
                   Session.client_ids, Session.speaker_map, Session.session_type,
                   func.extract("epoch", func.now() - Session.vendor_submitted_at).label("job_age_s"))
            .where(Session.id == session_id, Session.status.in_([s.value for s in ACTIVE]))
        ).one_or_none()
        if row is None:
            return None
        return CaptureState(SessionStatus(row.status), row.audio_path, row.vendor_job_id,
                            None if row.job_age_s is None else float(row.job_age_s), row.raw_turns,
                            list(row.client_ids), row.speaker_map, row.session_type)

    # --- fenced writes ---------------------------------------------------------------
    def _fenced(
        self,
        session_id: uuid.UUID,
        fence: int,
        target: SessionStatus | None,
        db: OrmSession | None = None,
        **values: Any,
    ) -> None:
        """``UPDATE sessions SET … WHERE id AND fence [AND status IN predecessors(target)]``.

        Runs in ``db``'s transaction (or its own). Raises FenceLost when the fence moved on,
        IllegalTransition when the status forbids the move.
        """
        if db is None:
            with db_session(self.url) as own:
                self._fenced(session_id, fence, target, own, **values)
            return
        # The run row first (lock order: durable_runs, then sessions): a newer run's count waits.
        self.runs.hold(db, session_id, fence)
        conditions = [Session.id == session_id]
        if target is not None:
            conditions.append(Session.status.in_([s.value for s in predecessors(target)]))
            values["status"] = target.value
        stmt = update(Session).where(*conditions).values(updated_at=func.now(), **values).returning(Session.id)
        if db.execute(stmt).one_or_none() is not None:
            return
        current = db.execute(select(Session.status).where(Session.id == session_id)).scalar_one_or_none()
        if current is None:
            raise NotFound(f"session {session_id} does not exist")
        assert target is not None
        raise IllegalTransition(f"session {session_id} cannot move from {current} to {target.value}")

    def set_status(self, session_id: uuid.UUID, fence: int, target: SessionStatus) -> None:
        """Move the session to ``target`` (fenced, guarded)."""
        self._fenced(session_id, fence, target)

    def open_ledger(self, session_id: uuid.UUID, run: int, callback_secret_sha256: bytes | None = None) -> uuid.UUID:
        """Write the submission-ledger row *before* submitting, so a job cut off unsaved can be found.

        ``callback_secret_sha256``: SHA-256 of the secret the job's notification will carry.
        """
        with db_session(self.url) as db:
            return db.execute(
                insert(VendorSubmission).values(session_id=session_id, run=run,
                                                callback_secret_sha256=callback_secret_sha256)
                .returning(VendorSubmission.id)
            ).scalar_one()

    def ledger_jobs(self, session_id: uuid.UUID) -> list[str]:
        """Vendor job ids the ledger knows for this session and has not seen deleted, newest first."""
        with db_session(self.url) as db:
            return [job for job in
                db.execute(
                    select(VendorSubmission.vendor_job_id)
                    .where(
                        VendorSubmission.session_id == session_id,
                        VendorSubmission.vendor_job_id.is_not(None),
                        VendorSubmission.deleted_at.is_(None),
                    )
                    .order_by(VendorSubmission.submitted_at.desc())
                ).scalars() if job is not None
            ]

    def note_job(self, session_id: uuid.UUID, ledger_id: uuid.UUID | None, job_id: str) -> None:
        """Record a vendor job id in the ledger the moment a submit or adoption returns it (unfenced, own commit).

        Withdrawal and failure delete every job the ledger knows, so this must not wait for a
        fenced write that a newer run (or a withdrawal) could make fail.
        """
        with db_session(self.url) as db:
            if ledger_id is not None:
                db.execute(update(VendorSubmission).where(VendorSubmission.id == ledger_id)
                           .values(vendor_job_id=job_id))
            known = db.execute(select(VendorSubmission.id).where(VendorSubmission.vendor_job_id == job_id)).first()
            if known is None:  # adopted from the vendor's list: no ledger row of ours yet
                db.execute(insert(VendorSubmission).values(session_id=session_id, run=0, vendor_job_id=job_id))

    def save_job_id(self, session_id: uuid.UUID, fence: int, job_id: str, audio_path: str | None) -> None:
        """Commit the vendor job id (fenced) and, in the same transaction, queue our audio's delete.

        From this commit on the vendor's copy is what a later run resumes from, so our copy is
        redundant: its delete is in the outbox, whatever happens to this run.
        """
        with db_session(self.url) as db:
            self._fenced(
                session_id, fence, SessionStatus.RECOGNIZING, db,
                vendor_job_id=job_id, vendor_submitted_at=func.now(), audio_path=None,
            )
            if audio_path:
                outbox.add(db, outbox.FILE_DELETE, {"path": audio_path, "reason": "submitted"}, session_id)

    def retire_new_job(self, session_id: uuid.UUID, fence: int, ledger_id: uuid.UUID, job_id: str) -> bool:
        """Retire a job this run made (never to be adopted) and queue its delete — only while our fence holds.

        One transaction under the run row's lock, so a newer run's count (which must precede its
        adoption) waits for this commit and then sees the job retired. Returns False when a newer
        run exists: the job (already in the ledger) is left for that run to adopt, or the
        stranded-job sweep to delete.
        """
        try:
            with db_session(self.url) as db:
                self._fenced(session_id, fence, None, db)
                db.execute(
                    update(VendorSubmission).where(VendorSubmission.id == ledger_id)
                    .values(vendor_job_id=job_id, deleted_at=func.now(), delete_reason="lease_lost")
                )
                outbox.add(db, outbox.VENDOR_DELETE, {"job_id": job_id, "reason": "lease_lost"}, session_id)
            return True
        except FenceLost:
            return False

    def retire_if_finished(self, session_id: uuid.UUID, job_id: str) -> bool:
        """Queue the delete of a job made for a session that has meanwhile finished (withdrawn, failed,
        published); True if queued. A session still live keeps the job for its newer run to adopt."""
        with db_session(self.url) as db:
            status = db.execute(select(Session.status).where(Session.id == session_id).with_for_update()
                                ).scalar_one_or_none()
            if status is None or status in {s.value for s in ACTIVE} or status == SessionStatus.BLOCKED.value:
                return False
            outbox.add(db, outbox.VENDOR_DELETE, {"job_id": job_id, "reason": f"session_{status}"}, session_id)
        return True

    def retired_jobs(self, session_id: uuid.UUID) -> set[str]:
        """Vendor job ids of this session the ledger marks deleted (never to be adopted)."""
        with db_session(self.url) as db:
            return {
                job for job in db.execute(
                    select(VendorSubmission.vendor_job_id).where(
                        VendorSubmission.session_id == session_id,
                        VendorSubmission.vendor_job_id.is_not(None),
                        VendorSubmission.deleted_at.is_not(None),
                    )
                ).scalars() if job is not None
            }

    def mark_vendor_deleted(self, job_id: str, reason: str) -> None:
        """Record in the ledger that a vendor job is gone (and count it by reason)."""
        metrics.vendor_jobs_deleted.labels(reason=reason).inc()
        with db_session(self.url) as db:
            db.execute(
                update(VendorSubmission)
                .where(VendorSubmission.vendor_job_id == job_id, VendorSubmission.deleted_at.is_(None))
                .values(deleted_at=func.now(), delete_reason=reason)
            )

    def save_checkpoint(self, session_id: uuid.UUID, fence: int, turns: list[dict[str, Any]], job_id: str,
                        audio_path: str | None) -> None:
        """Commit the raw speaker turns exactly as the recognizer gave them (fenced) → checkpointed.

        The same transaction forgets the vendor job and queues its delete (and our audio's, if a
        resubmission kept it): publishing never depends on the vendor again.
        """
        with db_session(self.url) as db:
            self._fenced(session_id, fence, SessionStatus.CHECKPOINTED, db, raw_turns=turns, vendor_job_id=None,
                         audio_path=None)
            outbox.add(db, outbox.VENDOR_DELETE, {"job_id": job_id, "reason": "checkpointed"}, session_id)
            if audio_path:
                outbox.add(db, outbox.FILE_DELETE, {"path": audio_path, "reason": "checkpointed"}, session_id)

    def resume_from_audio(self, session_id: uuid.UUID, fence: int, lost_job_id: str, audio_path: str) -> bool:
        """The vendor lost the job, our audio is still here: make the audio the session's copy again.

        One fenced transaction: forget the lost job (ledger: ``lost``), point the session at
        ``audio_path`` and cancel its pending delete (queued when the job id was saved). The
        file's existence is checked after the cancel took the delete's lock, so a delete in
        flight either finished first (→ False: the vendor's copy was the only one) or never runs.
        Raises FenceLost / IllegalTransition like every fenced write.
        """
        with db_session(self.url) as db:
            self.runs.hold(db, session_id, fence)
            outbox.cancel_file_deletes(db, session_id, audio_path, "resubmitted from this recording")
            if not Path(audio_path).exists():
                db.rollback()
                return False
            self._fenced(session_id, fence, None, db, vendor_job_id=None, audio_path=audio_path)
            db.execute(
                update(VendorSubmission)
                .where(VendorSubmission.vendor_job_id == lost_job_id, VendorSubmission.deleted_at.is_(None))
                .values(deleted_at=func.now(), delete_reason="lost")
            )
        metrics.vendor_jobs_deleted.labels(reason="lost").inc()
        return True

    def clear_vendor_job(self, session_id: uuid.UUID, fence: int) -> None:
        """Forget the vendor job id once the job is deleted (fenced)."""
        self._fenced(session_id, fence, None, vendor_job_id=None)

    def publish(
        self,
        session_id: uuid.UUID,
        fence: int,
        run: int,
        polished: bool,
        shown: list[dict[str, Any]],
    ) -> None:
        """Publish the session's record (one transcript per client id), mark it ready, log the event — atomically.

        ``shown`` is the rendered turn list (polished text, each turn's role): the record's base,
        split per client by ``verbatim.record.writer``. The notification is queued in the
        outbox with the status it announces.
        """
        with db_session(self.url) as db:
            self._fenced(session_id, fence, SessionStatus.READY, db, polished=polished, finished_at=func.now())
            queue_copies_deleted(db, session_id, "published", ledger=False)
            # The record's one writer: it keeps ``shown`` as the base every later change rebuilds from.
            writer.publish(db, session_id, shown, polished)
            db.execute(insert(SessionEvent).values(session_id=session_id, run=run, kind="transcript_ready"))
            self._notify(db, session_id, "transcript_ready", run)
            # The analysis request commits with the transcript: a lost event is re-emitted from it.
            record_request(db, session_id)

    def fail(
        self,
        session_id: uuid.UUID,
        fence: int,
        run: int,
        code: str,
        detail: str,
        *,
        blocked: bool = False,
        drop_checkpoint: bool = False,
    ) -> None:
        """Record a terminal failure (or a block) with its named code and event, atomically (fenced).

        A failure queues, in the same transaction, the delete of every copy it made pointless
        (each vendor job the ledger knows, the session's job, any job the vendor lists with the
        session's tag, our audio) and the notification: all resumable if this process dies next.
        A block keeps everything for an admin retry. ``drop_checkpoint`` also deletes the saved
        turns and published transcripts: the fenced write that replaces them is this one.
        """
        target = SessionStatus.BLOCKED if blocked else SessionStatus.FAILED
        kind = "session_blocked" if blocked else "session_failed"
        with db_session(self.url) as db:
            self._fenced(
                session_id, fence, target, db, failure_code=code, failure_detail=detail[:2000],
                finished_at=None if blocked else func.now(),
            )
            if not blocked:
                queue_copies_deleted(db, session_id, code, ledger=True)
            if drop_checkpoint:
                writer.clear(db, session_id, code, None, "transcript_dropped")
            db.execute(insert(SessionEvent).values(session_id=session_id, run=run, kind=kind, failure_code=code))
            self._notify(db, session_id, kind, run, failure_code=code)

    def _notify(self, db: OrmSession, session_id: uuid.UUID, event: str, run: int, **fields: Any) -> None:
        if self.webhooks:
            outbox.add(db, outbox.WEBHOOK, {"event": event, "session_id": str(session_id), "run": run, **fields},
                       session_id)

    def add_event(
        self, session_id: uuid.UUID, run: int, kind: str, failure_code: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        """Append an event to the session's log (not fenced: events are history, not state)."""
        with db_session(self.url) as db:
            db.execute(
                insert(SessionEvent).values(
                    session_id=session_id, run=run, kind=kind, failure_code=failure_code, detail=detail
                )
            )

    # --- reads -------------------------------------------------------------------------
    def get(self, session_id: uuid.UUID) -> Session:
        """The session row (detached); raises NotFound."""
        with db_session(self.url) as db:
            row = db.get(Session, session_id)
            if row is None:
                raise NotFound(f"session {session_id} does not exist")
            db.expunge(row)
            return row


def queue_copies_deleted(db: OrmSession, session_id: uuid.UUID, reason: str, *, ledger: bool) -> None:
    """Forget a session's audio and vendor job and queue their deletes in ``db``'s transaction.

    Call only inside the durable write that makes the copies redundant (fenced, or the
    withdrawal's fence bump). ``ledger``: also every job the ledger knows for the session and
    every job the vendor lists with its tag.
    """
    row = db.execute(select(Session.audio_path, Session.vendor_job_id).where(Session.id == session_id)).one()
    db.execute(update(Session).where(Session.id == session_id).values(audio_path=None, vendor_job_id=None))
    if row.audio_path:
        outbox.add(db, outbox.FILE_DELETE, {"path": row.audio_path, "reason": reason}, session_id)
    jobs = {row.vendor_job_id} if row.vendor_job_id else set()
    if ledger:
        jobs.update(
            job for job in db.execute(
                select(VendorSubmission.vendor_job_id).where(
                    VendorSubmission.session_id == session_id, VendorSubmission.vendor_job_id.is_not(None),
                    VendorSubmission.deleted_at.is_(None))
            ).scalars() if job
        )
        outbox.add(db, outbox.VENDOR_DELETE_TAGGED, {"reason": reason}, session_id)
    for job in sorted(jobs):
        outbox.add(db, outbox.VENDOR_DELETE, {"job_id": job, "reason": reason}, session_id)
