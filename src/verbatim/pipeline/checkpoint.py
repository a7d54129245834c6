"""Step 5 — Checkpoint: wait for the vendor, **save the speaker turns**, then delete its copy (via the outbox)."""

from __future__ import annotations

import random
import time
from typing import Any

import structlog

from verbatim.context import ProcessContext
from verbatim.crash import crash_point
from verbatim.db.repo import CaptureState
from verbatim.durable.core import Ticket
from verbatim.errors import AudioRejected, RecognizerJobLost, RecognizerTransient
from verbatim.leases import Lease
from verbatim.recognizer.client import JobState
from verbatim.recognizer.turns import results_to_turns

log = structlog.get_logger("verbatim.checkpoint")


def wait_for_job(ctx: ProcessContext, ticket: Ticket[CaptureState], lease: Lease, job_id: str,
                 park_after_s: float | None = None) -> bool:
    """Poll the job with exponential backoff until done (True), checking the lease and the drain deadline.

    ``park_after_s``: stop polling after this long (False: the run parks instead of holding its
    worker; it looks at least once). None: poll until done.

    The job timeout (``recognizer_job_timeout_s``) counts from the job's submission (database
    clock), not from this run's start: a run that resumes does not restart it.
    Raises AudioRejected (rejected), RecognizerJobLost (deleted/expired), RecognizerTransient
    (still running past the job timeout), LeaseLost, RunCancelled.
    """
    s = ctx.settings
    wait = s.recognizer_poll_min_s
    age = ticket.state.job_age_s or 0.0
    give_up = time.monotonic() + max(0.0, s.recognizer_job_timeout_s - age)
    park_at = None if park_after_s is None else time.monotonic() + park_after_s
    while True:
        state = ctx.cancel.bounded(lambda: ctx.recognizer.state(job_id))
        if state is JobState.DONE:
            return True
        if state is JobState.REJECTED:
            raise AudioRejected(f"recognizer rejected the audio of job {job_id}")
        if state in (JobState.DELETED, JobState.EXPIRED):
            raise RecognizerJobLost(f"vendor job {job_id} is {state.value} before its turns were saved")
        crash_point("mid_poll")
        if time.monotonic() > give_up:
            raise RecognizerTransient(f"vendor job {job_id} still running {s.recognizer_job_timeout_s} s after "
                                      "its submission")
        if park_at is not None and time.monotonic() >= park_at:
            return False
        lease.check()
        ctx.cancel.check()
        time.sleep(wait * random.uniform(0.8, 1.2))  # noqa: S311 - jitter only
        wait = min(wait * 1.6, s.recognizer_poll_max_s)


def checkpoint(ctx: ProcessContext, ticket: Ticket[CaptureState], lease: Lease, job_id: str,
               park_after_s: float | None = None) -> list[dict[str, Any]] | None:
    """Fetch the finished job's speaker turns and commit them before any model touches them.

    The commit also queues the vendor copy's delete in the outbox, tried at once and then by
    the sweep process until done: from here on nothing depends on the vendor. None when the
    job is not done after ``park_after_s`` (the run parks).
    """
    if not wait_for_job(ctx, ticket, lease, job_id, park_after_s):
        return None
    turns = results_to_turns(ctx.cancel.bounded(lambda: ctx.recognizer.transcript(job_id)))
    crash_point("after_turns_fetched")
    lease.check()
    ctx.repo.save_checkpoint(ticket.subject_id, ticket.fence, turns, job_id, ticket.state.audio_path)
    crash_point("after_checkpoint")
    ctx.cancel.bounded(lambda: ctx.cleanup.now(ticket.subject_id))
    return turns
