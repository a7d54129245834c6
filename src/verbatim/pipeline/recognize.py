"""Step 4 — Recognize: adopt or submit, **save the job id**, and only then delete our audio."""

from __future__ import annotations

import uuid

import structlog

from verbatim.crash import crash_point
from verbatim.db.repo import RunTicket
from verbatim.errors import LeaseLost, RecognizerJobLost
from verbatim.leases import Lease
from verbatim.pipeline.context import RunContext
from verbatim.telemetry import metrics

log = structlog.get_logger("verbatim.recognize")


def adopt(ctx: RunContext, session_id: uuid.UUID) -> str | None:
    """A live vendor job of ours for this session — ledger first, then the vendor's list — or None.

    A run cut off between submit and save left such a job; adopting it instead of
    submitting again keeps exactly one vendor submission per session.
    """
    for job_id in ctx.repo.ledger_jobs(session_id):
        try:
            state = ctx.recognizer.state(job_id)
        except RecognizerJobLost:
            continue
        if state.value in ("running", "done"):
            return job_id
    return ctx.recognizer.find_session_job(session_id, exclude=ctx.repo.retired_jobs(session_id))


def recognize(ctx: RunContext, ticket: RunTicket, lease: Lease) -> str:
    """Get the session's audio to the recognizer exactly once; returns the saved vendor job id.

    Raises RecognizerTransient when the vendor stays unavailable past the retry budget,
    RecognizerAuth / AudioRejected for permanent faults, LeaseLost / FenceLost / RunCancelled
    when the run must stop.
    """
    sid = ticket.session_id
    job_id = adopt(ctx, sid)
    ledger_id = None
    if job_id is not None:
        log.info("vendor_job_adopted", session_id=str(sid), run=ticket.run)
    else:
        if not ticket.audio_path:
            raise RecognizerJobLost("no recording and no vendor job: nothing left to recognize")
        lease.check()
        ctx.cancel.check()
        ledger_id = ctx.repo.open_ledger(sid, ticket.run)
        for attempt in ctx.recognizer.retry.attempts_iter():
            with attempt:
                # A submit that timed out may have created the job anyway: look before resubmitting.
                found = adopt(ctx, sid) if attempt.num > 1 else None
                job_id = found or ctx.recognizer.submit(ctx.volume.path_for(sid), sid)
        assert job_id is not None
        crash_point("after_submit")
        if not lease.renew():
            # Lost the lease during the submit: the new job must not outlive it — unless a newer
            # run already exists and may adopt it (then the ledger keeps it for that run or the sweep).
            if ctx.repo.retire_new_job(sid, ticket.fence, ledger_id, job_id):
                ctx.recognizer.delete(job_id)
                metrics.vendor_jobs_deleted.labels(reason="lease_lost").inc()
            raise LeaseLost("lease lost while submitting")
    # The job id must be durable before our copy of the audio goes: from here the vendor's copy
    # is what a later run resumes from.
    ctx.repo.save_job_id(sid, ticket.fence, ledger_id, job_id)
    crash_point("after_job_saved")
    drop_audio(ctx, ticket)
    return job_id


def drop_audio(ctx: RunContext, ticket: RunTicket) -> None:
    """Delete our recording once a saved vendor job id has made it redundant.

    Called only after this run's fenced write succeeded (job id saved, or the status write
    that resumed the run): the fenced ``clear_audio`` proves we are still the newest run.
    """
    path = ctx.volume.path_for(ticket.session_id)
    if ticket.audio_path is None and not path.exists():
        return
    ctx.repo.clear_audio(ticket.session_id, ticket.fence)
    ctx.volume.delete(path)
