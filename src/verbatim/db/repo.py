"""Every database operation of the capture run, each one statement or one transaction.

Writes made by a run are *fenced*: ``UPDATE sessions … WHERE id = :id AND fence = :token``.
Zero rows means a newer run took the session (FenceLost) and this run must stop at once.
The fencing token lives in PostgreSQL, so a flushed Redis cannot reset it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.orm import Session as OrmSession

from verbatim.db.engine import db_session
from verbatim.db.models import Session, SessionEvent, Transcript, VendorSubmission
from verbatim.errors import FenceLost, IllegalTransition, NotFound
from verbatim.reliability.sweep import record_request
from verbatim.states import ACTIVE, SessionStatus, predecessors
from verbatim.telemetry import metrics


@dataclass(frozen=True)
class RunTicket:
    """What a run learns when it is counted: its number, its fencing token and the checkpoint."""

    session_id: uuid.UUID
    run: int
    fence: int
    status: SessionStatus
    audio_path: str | None
    vendor_job_id: str | None
    raw_turns: list[dict[str, Any]] | None
    client_ids: list[str]
    speaker_map: dict[str, str] | None


class Repo:
    """Database operations over one PostgreSQL URL (engine per process)."""

    def __init__(self, database_url: str):
        self.url = database_url

    # --- counting a run --------------------------------------------------------------
    def start_run(self, session_id: uuid.UUID) -> RunTicket | None:
        """Count a run and take a new fencing token, in one statement.

        Returns None when the session has no outstanding work (finished, blocked, deleted,
        unknown): such a run does nothing.
        """
        stmt = (
            update(Session)
            .where(Session.id == session_id, Session.status.in_([s.value for s in ACTIVE]))
            .values(runs=Session.runs + 1, fence=Session.fence + 1, updated_at=func.now())
            .returning(
                Session.runs, Session.fence, Session.status, Session.audio_path, Session.vendor_job_id,
                Session.raw_turns, Session.client_ids, Session.speaker_map,
            )
        )
        with db_session(self.url) as db:
            row = db.execute(stmt).one_or_none()
        if row is None:
            return None
        return RunTicket(session_id, row.runs, row.fence, SessionStatus(row.status), row.audio_path,
                         row.vendor_job_id, row.raw_turns, list(row.client_ids), row.speaker_map)

    def refund_run(self, session_id: uuid.UUID, fence: int) -> None:
        """Give back a run that ended on a transient fault: such faults never spend a run."""
        self._fenced(session_id, fence, None, runs=Session.runs - 1)

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

        Raises FenceLost when the fence moved on, IllegalTransition when the status forbids
        the move.
        """
        conditions = [Session.id == session_id, Session.fence == fence]
        if target is not None:
            conditions.append(Session.status.in_([s.value for s in predecessors(target)]))
            values["status"] = target.value
        stmt = update(Session).where(*conditions).values(updated_at=func.now(), **values).returning(Session.id)
        if db is not None:
            self._check(db, db.execute(stmt).one_or_none(), session_id, fence, target)
            return
        with db_session(self.url) as own:
            self._check(own, own.execute(stmt).one_or_none(), session_id, fence, target)

    @staticmethod
    def _check(db: OrmSession, row: Any, session_id: uuid.UUID, fence: int, target: SessionStatus | None) -> None:
        if row is not None:
            return
        current = db.execute(select(Session.fence, Session.status).where(Session.id == session_id)).one_or_none()
        if current is None:
            raise NotFound(f"session {session_id} does not exist")
        if current.fence != fence:
            raise FenceLost(f"session {session_id}: fence is {current.fence}, this run holds {fence}")
        assert target is not None
        raise IllegalTransition(f"session {session_id} cannot move from {current.status} to {target.value}")

    def set_status(self, session_id: uuid.UUID, fence: int, target: SessionStatus) -> None:
        """Move the session to ``target`` (fenced, guarded)."""
        self._fenced(session_id, fence, target)

    def open_ledger(self, session_id: uuid.UUID, run: int) -> uuid.UUID:
        """Write the submission-ledger row *before* submitting, so a job cut off unsaved can be found."""
        with db_session(self.url) as db:
            return db.execute(
                insert(VendorSubmission).values(session_id=session_id, run=run).returning(VendorSubmission.id)
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

    def save_job_id(self, session_id: uuid.UUID, fence: int, ledger_id: uuid.UUID | None, job_id: str) -> None:
        """Commit the vendor job id on the session (fenced) and in the ledger, in one transaction."""
        with db_session(self.url) as db:
            self._fenced(
                session_id, fence, SessionStatus.RECOGNIZING, db,
                vendor_job_id=job_id, vendor_submitted_at=func.now(),
            )
            if ledger_id is not None:
                db.execute(
                    update(VendorSubmission).where(VendorSubmission.id == ledger_id).values(vendor_job_id=job_id)
                )

    def retire_new_job(self, session_id: uuid.UUID, fence: int, ledger_id: uuid.UUID, job_id: str) -> bool:
        """Mark a job this run made as deleted in the ledger — only while our fence is current.

        One transaction: the fenced no-op UPDATE holds the session row, so a newer run's
        ``start_run`` (which must precede its adoption) waits for this commit and then sees the
        job marked deleted (adoption skips such jobs). Returns False when a newer run exists:
        then the job is recorded as live and left for that run to adopt (or the sweep to delete).
        """
        try:
            with db_session(self.url) as db:
                self._fenced(session_id, fence, None, db)
                db.execute(
                    update(VendorSubmission).where(VendorSubmission.id == ledger_id)
                    .values(vendor_job_id=job_id, deleted_at=func.now(), delete_reason="lease_lost")
                )
            return True
        except FenceLost:
            self.note_ledger_job(ledger_id, job_id)
            return False

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

    def note_ledger_job(self, ledger_id: uuid.UUID, job_id: str) -> None:
        """Record a job id in the ledger alone (a job this run made but will not keep)."""
        with db_session(self.url) as db:
            db.execute(update(VendorSubmission).where(VendorSubmission.id == ledger_id).values(vendor_job_id=job_id))

    def mark_vendor_deleted(self, job_id: str, reason: str) -> None:
        """Record in the ledger that a vendor job is gone (and count it by reason)."""
        metrics.vendor_jobs_deleted.labels(reason=reason).inc()
        with db_session(self.url) as db:
            db.execute(
                update(VendorSubmission)
                .where(VendorSubmission.vendor_job_id == job_id, VendorSubmission.deleted_at.is_(None))
                .values(deleted_at=func.now(), delete_reason=reason)
            )

    def clear_audio(self, session_id: uuid.UUID, fence: int) -> None:
        """Forget the audio path once the file is deleted (fenced)."""
        self._fenced(session_id, fence, None, audio_path=None)

    def save_checkpoint(self, session_id: uuid.UUID, fence: int, turns: list[dict[str, Any]]) -> None:
        """Commit the raw speaker turns exactly as the recognizer gave them (fenced) → checkpointed."""
        self._fenced(session_id, fence, SessionStatus.CHECKPOINTED, raw_turns=turns)

    def clear_vendor_job(self, session_id: uuid.UUID, fence: int) -> None:
        """Forget the vendor job id once the job is deleted (fenced)."""
        self._fenced(session_id, fence, None, vendor_job_id=None)

    def publish(
        self,
        session_id: uuid.UUID,
        fence: int,
        run: int,
        records: dict[str, list[dict[str, Any]]],
        polished: bool,
        shown: list[dict[str, Any]],
    ) -> None:
        """Replace the session's transcripts (one per client id), mark it ready, log the event — atomically.

        ``shown`` is the published turn list the records were split from (kept for re-splits).
        """
        with db_session(self.url) as db:
            self._fenced(
                session_id, fence, SessionStatus.READY, db, polished=polished, finished_at=func.now(),
                published_turns=shown,
            )
            db.execute(delete(Transcript).where(Transcript.session_id == session_id))
            for client_id, segments in records.items():
                db.execute(
                    insert(Transcript).values(
                        session_id=session_id, client_id=client_id, segments=segments, polished=polished
                    )
                )
            db.execute(insert(SessionEvent).values(session_id=session_id, run=run, kind="transcript_ready"))
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

        ``drop_checkpoint`` also deletes the saved turns and published transcripts: the fenced
        write that replaces them is this one.
        """
        target = SessionStatus.BLOCKED if blocked else SessionStatus.FAILED
        extra: dict[str, Any] = {"raw_turns": None, "published_turns": None} if drop_checkpoint else {}
        with db_session(self.url) as db:
            self._fenced(
                session_id, fence, target, db, failure_code=code, failure_detail=detail[:2000],
                finished_at=None if blocked else func.now(), **extra,
            )
            if drop_checkpoint:
                db.execute(delete(Transcript).where(Transcript.session_id == session_id))
            db.execute(
                insert(SessionEvent).values(
                    session_id=session_id, run=run, kind="session_blocked" if blocked else "session_failed",
                    failure_code=code,
                )
            )

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

    def active_since(self, updated_before: datetime) -> list[uuid.UUID]:
        """Sessions with work outstanding, untouched since ``updated_before`` (uses ix_sessions_active)."""
        with db_session(self.url) as db:
            return list(
                db.execute(
                    select(Session.id).where(
                        Session.status.in_([s.value for s in ACTIVE]), Session.updated_at < updated_before
                    )
                ).scalars()
            )
