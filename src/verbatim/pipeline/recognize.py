"""Step 4 — Recognize: adopt or submit, **save the job id**, and only then delete our audio."""

from __future__ import annotations

import hashlib
import secrets
import uuid

import structlog

from verbatim.context import ProcessContext
from verbatim.crash import crash_point
from verbatim.db.repo import CaptureState
from verbatim.durable.core import Ticket
from verbatim.errors import FenceLost, IllegalTransition, LeaseLost, RecognizerJobLost
from verbatim.leases import Lease
from verbatim.polish.split import speaker_count
from verbatim.recognizer.client import Notify

log = structlog.get_logger("verbatim.recognize")


def adopt(ctx: ProcessContext, session_id: uuid.UUID) -> str | None:
    """A live vendor job of ours for this session — ledger first, then the vendor's list — or None.

    A run cut off between submit and save left such a job; adopting it instead of
    submitting again keeps exactly one vendor submission per session.
    """
    for job_id in ctx.repo.ledger_jobs(session_id):
        try:
            state = ctx.cancel.bounded(lambda j=job_id: ctx.recognizer.state(j))  # type: ignore[misc]
        except RecognizerJobLost:
            continue
        if state.value in ("running", "done"):
            return job_id
    retired = ctx.repo.retired_jobs(session_id)
    return ctx.cancel.bounded(lambda: ctx.recognizer.find_session_job(session_id, exclude=retired))


def callback(base_url: str | None, submission_id: uuid.UUID, secret: str | None) -> Notify | None:
    """The notification a submission asks for: ``{base}/v1/recognizer/callbacks/{submission}``, or None."""
    if not base_url or secret is None:
        return None
    return Notify(f"{base_url.rstrip('/')}/v1/recognizer/callbacks/{submission_id}", secret)


def recognize(ctx: ProcessContext, ticket: Ticket[CaptureState], lease: Lease) -> str:
    """Get the session's audio to the recognizer exactly once; returns the saved vendor job id.

    Raises RecognizerTransient when the vendor stays unavailable past the retry budget,
    RecognizerAuth / AudioRejected for permanent faults, LeaseLost / FenceLost / RunCancelled
    when the run must stop. Every blocking call is bounded by the drain deadline.
    """
    sid = ticket.subject_id
    state = ticket.state
    job_id = adopt(ctx, sid)
    ledger_id = None
    if job_id is not None:
        log.info("vendor_job_adopted", session_id=str(sid), run=ticket.run)
    else:
        if not state.audio_path:
            raise RecognizerJobLost("no recording and no vendor job: nothing left to recognize")
        lease.check()
        ctx.cancel.check()
        # A fresh secret per submission: the notification proves itself with it (only its hash is stored).
        secret = secrets.token_urlsafe(32) if ctx.settings.callback_base_url else None
        ledger_id = ctx.repo.open_ledger(sid, ticket.run,
                                         hashlib.sha256(secret.encode()).digest() if secret else None)
        notify = callback(ctx.settings.callback_base_url, ledger_id, secret)
        speakers = speaker_count(state.client_ids, state.session_type)
        for attempt in ctx.recognizer.retry.attempts_iter():
            with attempt:
                # A submit that timed out may have created the job anyway: look before resubmitting.
                found = adopt(ctx, sid) if attempt.num > 1 else None
                job_id = found or ctx.cancel.bounded(
                    lambda: ctx.recognizer.submit(ctx.volume.path_for(sid), sid, max_speakers=speakers,
                                                  notify=notify))
        assert job_id is not None
    # In the ledger at once, in its own commit: a withdrawal or failure that races this run
    # (and makes the fenced save below fail) still finds the job to delete.
    ctx.repo.note_job(sid, ledger_id, job_id)
    crash_point("after_submit")
    if ledger_id is not None and not lease.renew():
        # Lost the lease during the submit: the new job must not outlive it — unless a newer
        # run already exists and may adopt it (then the ledger keeps it for that run or the sweep).
        if ctx.repo.retire_new_job(sid, ticket.fence, ledger_id, job_id):
            ctx.cancel.bounded(lambda: ctx.cleanup.now(sid))
        raise LeaseLost("lease lost while submitting")
    # The job id must be durable before our copy of the audio goes: from here the vendor's copy
    # is what a later run resumes from. The same commit queues our audio's delete.
    try:
        ctx.repo.save_job_id(sid, ticket.fence, job_id, state.audio_path)
    except (FenceLost, IllegalTransition):
        # Withdrawn or failed while we submitted (its clean-up may have run before this job
        # existed): the job is nobody's, delete it. A newer live run keeps it to adopt.
        if ctx.repo.retire_if_finished(sid, job_id):
            ctx.cancel.bounded(lambda: ctx.cleanup.now(sid))
        raise
    crash_point("after_job_saved")
    ctx.cancel.bounded(lambda: ctx.cleanup.now(sid))
    return job_id
