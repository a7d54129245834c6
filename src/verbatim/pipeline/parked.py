"""Looking up parked sessions (a step of the sweep process; DESIGN.md "The capture run", parking).

A capture run that saved its vendor job id parks: it releases its lease and its worker, and
``durable_runs.parked_at`` marks the row. The session is due again when the recognizer's
notification arrives (``verbatim.api.callbacks``) or when its look-up time passes. Here,
every tick, the due parked rows are claimed in one batch and the vendor is asked about all of
them at once — one ``GET /v2/jobs`` per page (one call per tick when everything fits in
``recognizer_list_limit``), never one status request per session:

- done, rejected, gone, or not in the list → a run is queued (the run asks the job itself);
- still running → looked up again later, backing off with the job's age
  (``recognizer_park_s`` … ``recognizer_park_max_s``);
- past the session's deadline → a run is queued (it gives up with ``deadline_exceeded``);
- the vendor answers 429/5xx → nothing is queued and no run is spent: every claimed row and
  the poller itself wait (Retry-After when sent, else doubling up to ``recognizer_park_max_s``).

Parked rows are told from dead runs by ``parked_at`` alone (set by the park, cleared by the
next count); all times are the database's clock.

Why our own code: when a session is looked at again is the durability logic itself (the due
time in PostgreSQL); a scheduler library would keep it in the broker, which a flush loses.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog
from sqlalchemy import func, select, text

from verbatim.context import ProcessContext
from verbatim.db.engine import db_session
from verbatim.db.models import Session
from verbatim.durable.store import Seen
from verbatim.errors import RecognizerTransient
from verbatim.recognizer.client import JobState
from verbatim.telemetry import metrics

log = structlog.get_logger("verbatim.parked")

PARKED_BATCH = 1000
#: jobs created this long before the oldest parked submission are listed too (clock skew, slow saves)
LIST_MARGIN_S = 120.0


@dataclass
class Backoff:
    """The poller's wait after a vendor refusal (seconds; 0 when the last call succeeded). Per process."""

    wait_s: float = 0.0


@dataclass
class ParkedReport:
    """What one look-up did."""

    queued: list[uuid.UUID] = field(default_factory=list)
    waiting: int = 0
    backed_off_s: float = 0.0
    list_calls: int = 0


_backoff = Backoff()


def poll_parked(ctx: ProcessContext, backoff: Backoff = _backoff) -> ParkedReport:
    """Look up every parked session whose look-up time has passed (see the module docstring)."""
    s = ctx.settings
    report = ParkedReport()
    if not _poll_allowed(ctx):
        return report
    store = ctx.repo.runs
    claimed = store.claim_parked(PARKED_BATCH, s.recognizer_park_s)
    if not claimed:
        return report
    # Every due-time write below is conditional on the row as claimed here: a run that a notification
    # started meanwhile keeps its lease-expiry due time (its recovery is not put off by a look-up).
    queue_now = [c for c in claimed if c.overdue]
    ask = {c.subject_id: c for c in claimed if not c.overdue}
    jobs = _jobs_of(ctx, list(ask))
    queue_now.extend(c for sid, c in ask.items() if sid not in jobs)  # no session row: the run finds nothing to do
    if jobs:
        oldest = min(submitted for _, _, submitted in jobs.values())
        try:
            states = ctx.recognizer.states(oldest - timedelta(seconds=LIST_MARGIN_S), limit=s.recognizer_list_limit)
            backoff.wait_s = 0.0
        except RecognizerTransient as exc:
            # Nothing queued, no run spent: the vendor asked us to slow down.
            wait = max(exc.retry_after_s or 0.0,
                       min(max(backoff.wait_s * 2, s.sweep_tick_s * 2), s.recognizer_park_max_s))
            backoff.wait_s = wait
            _hold_poller(ctx, wait)
            store.set_due_many({ask[sid]: wait for sid in jobs}, parked=True)
            metrics.parked_lookups.labels(outcome="vendor_refused").inc(len(jobs))
            log.warning("parked_lookup_refused", wait_s=round(wait, 1), sessions=len(jobs), error=str(exc)[:200])
            report.backed_off_s = wait
        else:
            report.list_calls = 1
            later: dict[Seen, float] = {}
            for sid, (job_id, age, _) in jobs.items():
                if job_id is not None and states.get(job_id) is JobState.RUNNING:
                    later[ask[sid]] = min(s.recognizer_park_max_s, max(s.recognizer_park_s, age / 4))
                else:
                    queue_now.append(ask[sid])
            store.set_due_many(later, parked=True)
            report.waiting = len(later)
    for claim in queue_now:
        try:
            ctx.queue.enqueue(claim.subject_id)
        except Exception:
            store.set_due(claim, s.sweep_tick_s)  # the broker is down: look again next tick (still parked)
            raise
        report.queued.append(claim.subject_id)
    metrics.parked_lookups.labels(outcome="queued").inc(len(report.queued))
    metrics.parked_lookups.labels(outcome="still_running").inc(report.waiting)
    return report


def _jobs_of(ctx: ProcessContext, sids: list[uuid.UUID]) -> dict[uuid.UUID, tuple[str | None, float, datetime]]:
    """Session → (vendor job id, its age in seconds, its submission time), for sessions with a submission."""
    if not sids:
        return {}
    with db_session(ctx.repo.url) as db:
        return {
            row.id: (row.vendor_job_id, float(row.age), row.vendor_submitted_at)
            for row in db.execute(
                select(Session.id, Session.vendor_job_id, Session.vendor_submitted_at,
                       func.extract("epoch", func.now() - Session.vendor_submitted_at).label("age"))
                .where(Session.id.in_(sids), Session.vendor_submitted_at.is_not(None))
            )
        }


def _poll_allowed(ctx: ProcessContext) -> bool:
    """Whether the vendor may be asked now (database clock; a 429 holds every sweep process back)."""
    with db_session(ctx.repo.url) as db:
        held = db.execute(text("SELECT next_at > now() FROM sweep_schedule WHERE name = 'vendor_poll'")).scalar()
    return not held


def _hold_poller(ctx: ProcessContext, wait_s: float) -> None:
    with db_session(ctx.repo.url) as db:
        db.execute(
            text("""
                INSERT INTO sweep_schedule (name, next_at) VALUES ('vendor_poll', now() + make_interval(secs => :w))
                ON CONFLICT (name) DO UPDATE SET next_at = EXCLUDED.next_at
            """),
            {"w": wait_s},
        )
