"""The capture run (DESIGN.md "The capture run"): one execution for one session.

A run may start at any time, any number of times, on any worker. It finds whatever the
last run left — audio, a vendor job id, saved speaker turns — and continues from there.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from enum import StrEnum

import structlog

from verbatim.db.repo import RunTicket
from verbatim.errors import (
    AudioRejected,
    FenceLost,
    IllegalTransition,
    LeaseLost,
    RecognizerAuth,
    RecognizerJobLost,
    RecognizerTransient,
    RunCancelled,
)
from verbatim.leases import Lease
from verbatim.pipeline.checkpoint import checkpoint, drop_vendor_job
from verbatim.pipeline.context import RunContext
from verbatim.pipeline.publish import publish
from verbatim.pipeline.recognize import drop_audio, recognize
from verbatim.pipeline.teardown import Teardown, TeardownTimeout, budgeted
from verbatim.reliability.sweep import emit_requested
from verbatim.states import SessionStatus
from verbatim.telemetry import metrics

log = structlog.get_logger("verbatim.run")

INTERRUPTED = "interrupted"


class Outcome(StrEnum):
    """How a run ended."""

    BUSY = "busy"  #: another run holds the lease; this one did nothing and counted nothing
    NOTHING = "nothing"  #: the session has no outstanding work
    READY = "ready"  #: transcript published
    FAILED = "failed"  #: terminal failure recorded
    BLOCKED = "blocked"  #: configuration fault; audio kept for an admin retry
    INTERRUPTED = "interrupted"  #: too many runs; everything deleted, therapist told
    RETRY_LATER = "retry_later"  #: transient fault outlasted the budget; run refunded, re-queue later
    CANCELLED = "cancelled"  #: drain deadline passed; vendor copy kept, re-queue now
    SUPERSEDED = "superseded"  #: lease or fence lost to a newer run; wrote nothing more


def run_capture(ctx: RunContext, session_id: uuid.UUID) -> Outcome:
    """Execute one capture run for ``session_id``; never raises for expected faults.

    Order is the design: lease → count run + fencing token → bound runs → recognize →
    checkpoint → publish → release → notify.
    """
    lease = ctx.new_lease(session_id)
    if not lease.acquire():
        metrics.lock_acquired.labels(outcome="busy").inc()
        log.info("lease_busy", session_id=str(session_id))
        return Outcome.BUSY
    metrics.lock_acquired.labels(outcome="acquired").inc()
    ctx.queue.started(session_id)
    ticket: RunTicket | None = None
    outcome = Outcome.SUPERSEDED
    try:
        # Counted before any checkpoint is read: a saved checkpoint never lifts the run limit.
        ticket = ctx.repo.start_run(session_id)
        if ticket is None:
            outcome = Outcome.NOTHING
            return outcome
        metrics.session_runs.inc()
        structlog.contextvars.bind_contextvars(session_id=str(session_id), run=ticket.run)
        outcome = _run_steps(ctx, ticket, lease)
        return outcome
    finally:
        if outcome is Outcome.CANCELLED and ticket is not None:
            _teardown(ctx, ticket, lease)
        else:
            lease.release()
            if ticket is not None:
                _after_release(ctx, ticket, outcome)
        structlog.contextvars.unbind_contextvars("session_id", "run")


def _teardown(ctx: RunContext, ticket: RunTicket, lease: Lease) -> None:
    """A run cancelled by a drain: refund the run, release the lease, re-queue — each on a budget.

    The vendor's copy is kept (it is what the next run resumes from). If a write runs out of
    budget, the end event carries ``teardown_persist_timeout`` and the sweep recovers the session.
    """
    s = ctx.settings
    teardown = Teardown(str(ticket.session_id), ticket.run, s.teardown_budget_s, s.teardown_attempt_timeout_s)
    # A cooperative cancel is not a crash: it must not bring the session closer to `interrupted`.
    teardown.write("refund_run", lambda: ctx.repo.refund_run(ticket.session_id, ticket.fence))
    teardown.write("release_lease", lease.release)
    # Re-queue at once so recovery does not wait for the lease to expire.
    teardown.write("requeue", lambda: ctx.queue.enqueue(ticket.session_id))
    # The end event goes to PostgreSQL (the truth), with the named code if a write ran out of
    # budget. It may use one last attempt past the budget: budget + attempt < window still holds.
    started = teardown.started
    try:
        budgeted(
            "end_event",
            lambda: ctx.repo.add_event(ticket.session_id, ticket.run, "run_cancelled", teardown.failure_code,
                                       {"teardown_s": round(time.monotonic() - started, 3)}),
            max(s.teardown_attempt_timeout_s, teardown.deadline - time.monotonic()), s.teardown_attempt_timeout_s,
        )
    except TeardownTimeout:
        log.error("teardown_end_event_lost", failure_code="teardown_persist_timeout")
    teardown.finish(Outcome.CANCELLED.value)


def _run_steps(ctx: RunContext, ticket: RunTicket, lease: Lease) -> Outcome:
    try:
        return _steps_and_failures(ctx, ticket, lease)
    except (LeaseLost, FenceLost) as exc:
        # Also when recording a failure found a newer run: this run writes nothing more.
        log.warning("run_superseded", reason=type(exc).__name__)
        return Outcome.SUPERSEDED


def _steps_and_failures(ctx: RunContext, ticket: RunTicket, lease: Lease) -> Outcome:
    sid = ticket.session_id
    try:
        if ticket.run > ctx.settings.max_runs:
            interrupt(ctx, ticket)
            return Outcome.INTERRUPTED
        turns = ticket.raw_turns
        if turns is None:
            job_id = ticket.vendor_job_id
            if job_id is None:
                with metrics.stage("recognize"):
                    job_id = recognize(ctx, ticket, lease)
            else:
                # Resuming: this fenced write proves we are the newest run before any delete.
                ctx.repo.set_status(sid, ticket.fence, SessionStatus.RECOGNIZING)
                drop_audio(ctx, ticket)
            with metrics.stage("checkpoint"):
                turns = _checkpoint_or_resubmit(ctx, ticket, lease, job_id)
        ctx.repo.set_status(sid, ticket.fence, SessionStatus.PUBLISHING)
        _drop_leftovers(ctx, ticket)
        with metrics.stage("publish"):
            publish(ctx, ticket, lease, turns)
        return Outcome.READY
    except RunCancelled:
        log.info("run_cancelled")
        return Outcome.CANCELLED
    except RecognizerTransient as exc:
        log.warning("recognizer_unavailable", error=str(exc)[:200])
        ctx.repo.refund_run(sid, ticket.fence)
        return Outcome.RETRY_LATER
    except RecognizerAuth as exc:
        ctx.repo.fail(sid, ticket.fence, ticket.run, exc.failure_code, str(exc), blocked=True)
        ctx.repo.refund_run(sid, ticket.fence)
        return Outcome.BLOCKED
    except (AudioRejected, RecognizerJobLost) as exc:
        _fail_and_clean(ctx, ticket, exc.failure_code, str(exc))
        return Outcome.FAILED
    except IllegalTransition as exc:
        # Someone moved the session on (deleted by the therapist): nothing more to do here.
        log.warning("run_illegal_transition", error=str(exc))
        return Outcome.SUPERSEDED


def _checkpoint_or_resubmit(ctx: RunContext, ticket: RunTicket, lease: Lease, job_id: str) -> list:
    try:
        return checkpoint(ctx, ticket, lease, job_id)
    except RecognizerJobLost:
        # The vendor's copy is gone; if ours still exists it was not the only one: start over.
        if not ctx.volume.path_for(ticket.session_id).exists():
            raise
        log.warning("vendor_job_lost_audio_kept", job_id=job_id)
        ctx.repo.mark_vendor_deleted(job_id, "lost")
        ctx.repo.clear_vendor_job(ticket.session_id, ticket.fence)
        fresh = dataclasses.replace(ticket, vendor_job_id=None)
        return checkpoint(ctx, ticket, lease, recognize(ctx, fresh, lease))


def _drop_leftovers(ctx: RunContext, ticket: RunTicket) -> None:
    """After a fenced write of this run: delete copies the saved checkpoint made redundant."""
    if ticket.raw_turns is not None and ticket.vendor_job_id is not None:
        drop_vendor_job(ctx, ticket, ticket.vendor_job_id, reason="checkpointed")
    drop_audio(ctx, ticket)


def _fail_and_clean(ctx: RunContext, ticket: RunTicket, code: str, detail: str, *, drop: bool = False) -> None:
    """Record the failure (fenced), then delete every copy it made pointless."""
    ctx.repo.fail(ticket.session_id, ticket.fence, ticket.run, code, detail, drop_checkpoint=drop)
    for job_id in {*ctx.repo.ledger_jobs(ticket.session_id), *([ticket.vendor_job_id] if ticket.vendor_job_id else [])}:
        ctx.recognizer.delete(job_id)
        ctx.repo.mark_vendor_deleted(job_id, code)
    ctx.repo.clear_vendor_job(ticket.session_id, ticket.fence)
    drop_audio(ctx, ticket)


def interrupt(ctx: RunContext, ticket: RunTicket) -> None:
    """Too many runs: fail as ``interrupted`` and delete transcript, vendor job and audio."""
    log.warning("session_interrupted", runs=ticket.run)
    _fail_and_clean(ctx, ticket, INTERRUPTED, f"gave up after {ticket.run - 1} runs", drop=True)


def _after_release(ctx: RunContext, ticket: RunTicket, outcome: Outcome) -> None:
    """Step 7 (after the lease is released): re-queue or tell the therapist."""
    sid = ticket.session_id
    if outcome is Outcome.RETRY_LATER:
        ctx.queue.enqueue(sid, countdown_s=ctx.settings.recognizer_poll_max_s)
    elif outcome is Outcome.READY:
        # Before the webhook (which may wait out its budget). Never raises: if Redis is down,
        # the reliability sweep emits it later.
        emit_requested(ctx.redis, sid, None, database_url=ctx.repo.url)
        ctx.notifier.send("transcript_ready", sid, run=ticket.run)
    elif outcome in (Outcome.FAILED, Outcome.INTERRUPTED, Outcome.BLOCKED):
        row = ctx.repo.get(sid)
        ctx.notifier.send(f"session_{row.status}", sid, run=ticket.run, failure_code=row.failure_code)
    log.info("run_finished", outcome=outcome.value)
