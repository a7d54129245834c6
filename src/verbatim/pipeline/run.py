"""The capture run (DESIGN.md "The capture run"): the first kind of durable run.

A run may start at any time, any number of times, on any worker. It finds whatever the
last run left — audio, a vendor job id, saved speaker turns — and continues from there.
The core (``verbatim.durable.core``) does the lease, the count and fencing token, the run
bound and deadline, the drain and the settling of the due time; this module is the steps:
recognize → checkpoint → publish, and what a failure of each means.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import structlog
from sqlalchemy.orm import Session as OrmSession

from verbatim import keys
from verbatim.context import ProcessContext
from verbatim.crash import crash_point
from verbatim.db.repo import CaptureState
from verbatim.durable.core import DurableRuns, Limits, Outcome, Ticket
from verbatim.errors import (
    AudioRejected,
    KeyMissing,
    RecognizerAuth,
    RecognizerJobLost,
    RecognizerTransient,
    SealedDataError,
)
from verbatim.leases import Lease
from verbatim.pipeline.checkpoint import checkpoint
from verbatim.pipeline.publish import publish
from verbatim.pipeline.recognize import recognize
from verbatim.reliability.sweep import emit_requested
from verbatim.states import SessionStatus
from verbatim.telemetry import metrics

log = structlog.get_logger("verbatim.run")

CaptureTicket = Ticket[CaptureState]

__all__ = ["CaptureRun", "CaptureTicket", "Outcome", "capture_runs", "run_capture"]


class CaptureRun:
    """The capture run as a kind of durable run (see ``verbatim.durable.core.RunKind``)."""

    name = "capture"
    log_key = "session_id"

    def __init__(self, ctx: ProcessContext):
        self.ctx = ctx

    def load(self, db: OrmSession, subject_id: uuid.UUID) -> CaptureState | None:
        return self.ctx.repo.load(db, subject_id)

    def gone(self, state: CaptureState) -> str | None:
        return None  # a session row is never deleted; a withdrawn one has no work (``load`` says None)

    def steps(self, ticket: CaptureTicket, lease: Lease) -> Outcome:
        ctx = self.ctx
        sid = ticket.subject_id
        try:
            turns = ticket.state.raw_turns
            if turns is None:
                job_id = ticket.state.vendor_job_id
                park_after = ctx.settings.recognizer_park_after_s
                if job_id is None:
                    with metrics.stage("recognize"):
                        job_id = recognize(ctx, ticket, lease)
                        ticket = dataclasses.replace(ticket, state=dataclasses.replace(
                            ticket.state, vendor_job_id=job_id, audio_path=None, job_age_s=0.0))
                    if park_after <= 0:
                        # Saved and our audio's delete queued: the vendor works without us. No status
                        # call now — a job just submitted is not done.
                        return Outcome.PARKED
                else:
                    # Resuming: this fenced write proves we are the newest run.
                    ctx.repo.set_status(sid, ticket.fence, SessionStatus.RECOGNIZING)
                with metrics.stage("checkpoint"):
                    turns = _checkpoint_or_resubmit(ctx, ticket, lease, job_id, park_after)
                if turns is None:
                    return Outcome.PARKED
            ctx.repo.set_status(sid, ticket.fence, SessionStatus.PUBLISHING)
            with metrics.stage("publish"):
                publish(ctx, ticket, lease, turns)
            return Outcome.READY
        except RecognizerTransient as exc:
            log.warning("recognizer_unavailable", error=str(exc)[:200])
            return Outcome.RETRY_LATER
        except RecognizerAuth as exc:
            # Only reachable before the checkpoint: after it, nothing here calls the recognizer.
            ctx.repo.fail(sid, ticket.fence, ticket.run, exc.failure_code, str(exc), blocked=True)
            ctx.repo.runs.refund(sid, ticket.fence, None)
            return Outcome.BLOCKED
        except SealedDataError as exc:
            # Our own recording we cannot open (a key this process lacks, a damaged file): our
            # fault, so block with the audio kept — no run spent, nothing deleted — until an admin
            # retries once the key is imported (encryption_key_missing) or the disk is fixed.
            log.error("sealed_audio_unreadable", failure_code=exc.failure_code)
            ctx.repo.fail(sid, ticket.fence, ticket.run, exc.failure_code, _sealed_detail(exc), blocked=True)
            ctx.repo.runs.refund(sid, ticket.fence, None)
            return Outcome.BLOCKED
        except (AudioRejected, RecognizerJobLost) as exc:
            self.give_up(ticket, exc.failure_code, str(exc))
            return Outcome.FAILED

    def give_up(self, ticket: CaptureTicket, code: str, detail: str) -> None:
        """Fail the session (fenced) with its named code; deletes and the notification go to the outbox.

        ``interrupted`` and ``deadline_exceeded`` also delete the saved transcript (the run bound
        is never lifted by a checkpoint; a session past its deadline is not left half-done).
        """
        drop = code not in (AudioRejected.failure_code, RecognizerJobLost.failure_code)
        self.ctx.repo.fail(ticket.subject_id, ticket.fence, ticket.run, code, detail, drop_checkpoint=drop)
        # The clean-up is queued with the failure; `after` tries it once the lease is released.
        crash_point("after_failure_recorded")

    def event(self, ticket: CaptureTicket, kind: str, failure_code: str | None, detail: dict[str, Any]) -> None:
        self.ctx.repo.add_event(ticket.subject_id, ticket.run, kind, failure_code, detail)

    def requeue(self, subject_id: uuid.UUID) -> None:
        self.ctx.queue.enqueue(subject_id)

    def after(self, ticket: CaptureTicket, outcome: Outcome) -> None:
        """Step 7 (after the lease is released): deliver what the run queued, emit the analysis event."""
        sid = ticket.subject_id
        if outcome is Outcome.READY:
            # Never raises: if Redis is down, the reliability sweep emits it later.
            emit_requested(self.ctx.redis, sid, None, database_url=self.ctx.repo.url)
        if outcome in (Outcome.READY, Outcome.FAILED, Outcome.INTERRUPTED, Outcome.BLOCKED):
            self.ctx.cleanup.now(sid)


def _sealed_detail(exc: SealedDataError) -> str:
    """What the therapist's and the admin's views say, and what to do (no path, no key, no patient data)."""
    if isinstance(exc, KeyMissing):
        return ("the recording is sealed with an encryption key this worker does not hold; import the key "
                "(`verbatim keys import`) or give every process the current key ring, then retry the session")
    return "the stored recording could not be opened (damaged or cut short); it is kept for an admin to inspect"


def _checkpoint_or_resubmit(ctx: ProcessContext, ticket: CaptureTicket, lease: Lease, job_id: str,
                            park_after_s: float) -> list | None:
    try:
        return checkpoint(ctx, ticket, lease, job_id, park_after_s)
    except RecognizerJobLost:
        # The vendor's copy is gone; if ours still exists it was not the only one: start over.
        # One fenced write forgets the job, makes the audio the session's copy again and cancels
        # its pending delete — a run cut off after it resumes from the audio, never from nothing.
        audio = str(ctx.volume.path_for(ticket.subject_id))
        if not ctx.repo.resume_from_audio(ticket.subject_id, ticket.fence, job_id, audio):
            raise
        log.warning("vendor_job_lost_audio_kept", job_id=job_id)
        fresh = dataclasses.replace(ticket, state=dataclasses.replace(ticket.state, vendor_job_id=None,
                                                                      audio_path=audio, job_age_s=None))
        new_job = recognize(ctx, fresh, lease)
        return checkpoint(ctx, dataclasses.replace(fresh, state=dataclasses.replace(
            fresh.state, vendor_job_id=new_job, audio_path=None, job_age_s=0.0)), lease, new_job, park_after_s)


def capture_runs(ctx: ProcessContext) -> DurableRuns[CaptureState]:
    """The durable-run executor for capture runs with this process's settings."""
    s = ctx.settings
    limits = Limits(
        max_runs=s.max_runs, deadline_s=s.session_deadline_s, lease_ttl_s=s.lease_ttl_s, heartbeat_s=s.heartbeat_s,
        retry_later_s=s.retry_later_s, teardown_budget_s=s.teardown_budget_s,
        teardown_attempt_timeout_s=s.teardown_attempt_timeout_s, park_s=s.recognizer_park_s,
        outage_refund_budget_s=s.outage_refund_budget_s, outage_backoff_max_s=s.outage_backoff_max_s,
    )
    runs = DurableRuns(CaptureRun(ctx), ctx.repo.runs, ctx.redis, limits, keys.lease, holder=s.worker_name)
    runs.cancelled = lambda: ctx.cancel.cancelled
    return runs


def run_capture(ctx: ProcessContext, session_id: uuid.UUID) -> Outcome:
    """Execute one capture run for ``session_id``; never raises for expected faults."""
    return capture_runs(ctx).execute(session_id)
