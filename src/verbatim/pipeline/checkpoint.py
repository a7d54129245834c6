"""Step 5 — Checkpoint: wait for the vendor, **save the speaker turns**, then delete its copy."""

from __future__ import annotations

import random
import time
from typing import Any

import structlog

from verbatim.crash import crash_point
from verbatim.db.repo import RunTicket
from verbatim.errors import AudioRejected, RecognizerJobLost, RecognizerTransient
from verbatim.leases import Lease
from verbatim.pipeline.context import RunContext
from verbatim.recognizer.client import JobState
from verbatim.recognizer.turns import results_to_turns

log = structlog.get_logger("verbatim.checkpoint")


def wait_for_job(ctx: RunContext, ticket: RunTicket, lease: Lease, job_id: str) -> None:
    """Poll the job with exponential backoff until done, checking the lease and the drain deadline.

    Raises AudioRejected (rejected), RecognizerJobLost (deleted/expired), RecognizerTransient
    (still running after recognizer_job_timeout_s), LeaseLost, RunCancelled.
    """
    s = ctx.settings
    wait = s.recognizer_poll_min_s
    give_up = time.monotonic() + s.recognizer_job_timeout_s
    while True:
        state = ctx.recognizer.state(job_id)
        if state is JobState.DONE:
            return
        if state is JobState.REJECTED:
            raise AudioRejected(f"recognizer rejected the audio of job {job_id}")
        if state in (JobState.DELETED, JobState.EXPIRED):
            raise RecognizerJobLost(f"vendor job {job_id} is {state.value} before its turns were saved")
        crash_point("mid_poll")
        if time.monotonic() > give_up:
            raise RecognizerTransient(f"vendor job {job_id} still running after {s.recognizer_job_timeout_s} s")
        lease.check()
        ctx.cancel.check()
        time.sleep(wait * random.uniform(0.8, 1.2))  # noqa: S311 - jitter only
        wait = min(wait * 1.6, s.recognizer_poll_max_s)


def checkpoint(ctx: RunContext, ticket: RunTicket, lease: Lease, job_id: str) -> list[dict[str, Any]]:
    """Fetch the finished job's speaker turns and commit them before any model touches them."""
    wait_for_job(ctx, ticket, lease, job_id)
    turns = results_to_turns(ctx.recognizer.transcript(job_id))
    crash_point("after_turns_fetched")
    lease.check()
    ctx.repo.save_checkpoint(ticket.session_id, ticket.fence, turns)
    crash_point("after_checkpoint")
    drop_vendor_job(ctx, ticket, job_id, reason="checkpointed")
    return turns


def drop_vendor_job(ctx: RunContext, ticket: RunTicket, job_id: str, reason: str) -> None:
    """Delete the vendor's copy once this run's fenced write made it redundant (404 counts as deleted)."""
    ctx.recognizer.delete(job_id)
    ctx.repo.mark_vendor_deleted(job_id, reason)
    ctx.repo.clear_vendor_job(ticket.session_id, ticket.fence)
    log.info("vendor_job_deleted", session_id=str(ticket.session_id), run=ticket.run, reason=reason)
