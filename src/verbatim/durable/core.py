"""One durable-run mechanism for every kind of run (DESIGN.md "The capture run", steps 1–3 and 7).

    lease → count the run and take the fencing token → bound the runs (and the deadline)
          → the kind's steps → release → settle the due time → notify

with the drain (a cancelled run is refunded, keeps what it saved and is re-queued), a
wall-clock budget on every teardown write, and an idempotent refund for transient faults.
A kind (the capture run, the note run) supplies only what is its own: how to read its
subject, its steps, how to give up, and whom to tell. No expected fault escapes ``execute``.

Why our own code: this is the durability logic Verbatim exists for; Celery's retries and
acks decide nothing here (DESIGN.md "Failure modes").
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, Protocol, TypeVar

import redis
import structlog
from sqlalchemy.orm import Session as OrmSession

from verbatim.db.engine import db_session
from verbatim.durable.outage import Backoff, backend_of
from verbatim.durable.store import RunStore, Seen
from verbatim.durable.teardown import Teardown, TeardownTimeout, budgeted
from verbatim.errors import IllegalTransition, LeaseLost, NotFound, RunCancelled, RunStopped, VerbatimError
from verbatim.leases import Lease
from verbatim.telemetry import metrics

log = structlog.get_logger("verbatim.run")

INTERRUPTED = "interrupted"
DEADLINE_EXCEEDED = "deadline_exceeded"
SUBJECT_GONE = "subject_gone"  #: what the run works from was deleted (retention, a withdrawal)
#: a run given back for our own outage is due again this many seconds after the refund lands (at once)
OUTAGE_DUE_S = 0.0

S = TypeVar("S")


class Outcome(StrEnum):
    """How a run ended."""

    BUSY = "busy"  #: another run holds the lease; this one did nothing and counted nothing
    NOTHING = "nothing"  #: the subject has no outstanding work
    READY = "ready"  #: the run's result is published
    FAILED = "failed"  #: terminal failure recorded (and its clean-up queued in the outbox)
    BLOCKED = "blocked"  #: configuration fault; inputs kept for an admin retry
    INTERRUPTED = "interrupted"  #: too many runs; everything deleted, the owner told
    RETRY_LATER = "retry_later"  #: transient fault outlasted its budget, or our own outage; run refunded, due later
    FAULT = "fault"  #: an unexpected fault; the run stays counted (bounded by max_runs), due again later
    CANCELLED = "cancelled"  #: drain deadline passed; saved state kept, run refunded, re-queued now
    SUPERSEDED = "superseded"  #: lease or fence lost to a newer run (or the subject moved on); wrote nothing more
    PARKED = "parked"  #: waiting on a vendor: lease released, run given back, due at the look-up time (or notified)


#: outcomes after which the subject has nothing left to look at
FINAL = frozenset({Outcome.READY, Outcome.FAILED, Outcome.BLOCKED, Outcome.INTERRUPTED})


@dataclass(frozen=True)
class Ticket(Generic[S]):
    """What a run learns when it is counted: its number (1-based), fencing token, deadline, the subject's state."""

    subject_id: uuid.UUID
    run: int
    fence: int
    overdue: bool
    state: S


class RunKind(Protocol[S]):
    """What a kind of run supplies to the core."""

    name: str  #: ``durable_runs.kind`` and the lease's namespace
    log_key: str  #: the structured-log field naming the subject (e.g. ``session_id``)

    def load(self, db: OrmSession, subject_id: uuid.UUID) -> S | None:
        """The subject's state, read in the counting transaction; None when it has no outstanding work."""

    def gone(self, state: S) -> str | None:
        """Why the subject has work outstanding but nothing left to work from (None: it has); the core then
        gives up with ``subject_gone`` (fenced) instead of leaving the subject waiting for ever."""

    def steps(self, ticket: Ticket[S], lease: Lease) -> Outcome:
        """The kind's own work. May raise RunStopped (lease/fence lost, cancelled) and VerbatimError."""

    def give_up(self, ticket: Ticket[S], code: str, detail: str) -> None:
        """Record a terminal failure (fenced) and queue the clean-up of every copy in the outbox."""

    def event(self, ticket: Ticket[S], kind: str, failure_code: str | None, detail: dict[str, Any]) -> None:
        """Append an event to the subject's history (not fenced)."""

    def requeue(self, subject_id: uuid.UUID) -> None:
        """Send a message that starts a run now (may raise if the broker is down)."""

    def after(self, ticket: Ticket[S], outcome: Outcome) -> None:
        """After the lease is released: tell whoever waits (best effort; must not raise)."""


@dataclass(frozen=True)
class Limits:
    """The bounds of one kind of run (seconds unless named otherwise)."""

    max_runs: int
    deadline_s: float  #: wall-clock bound from the subject's creation
    lease_ttl_s: float
    heartbeat_s: float
    retry_later_s: float  #: when a refunded or faulted run is due again
    teardown_budget_s: float
    teardown_attempt_timeout_s: float
    park_s: float = 30.0  #: a parked subject's first look-up time (the sweep's poller backs off from there)
    outage_refund_budget_s: float = 300.0  #: how long a run cut off by our own outage tries to give its run back
    outage_backoff_max_s: float = 10.0  #: longest wait between two of those tries


class DurableRuns(Generic[S]):
    """Executes runs of one kind: ``execute(subject_id)`` → Outcome; never raises for expected faults."""

    def __init__(self, kind: RunKind[S], store: RunStore, client: redis.Redis, limits: Limits,
                 lease_key: Callable[[uuid.UUID], str], holder: str | None):
        self.kind = kind
        #: this worker's name (``verbatim worker --name``), recorded with each counted run of every kind so a
        #: restarted worker recovers them at once; a process without one is named by host and pid
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}"
        self.store = store
        self.redis = client
        self.limits = limits
        self.lease_key = lease_key
        #: returns True once the process is draining past its deadline (the capture run's cancel token)
        self.cancelled: Callable[[], bool] = lambda: False

    def execute(self, subject_id: uuid.UUID) -> Outcome:
        """Run the kind once for ``subject_id``. Order is the design; see the module docstring."""
        lim = self.limits
        lease = Lease(self.redis, subject_id, lim.lease_ttl_s, lim.heartbeat_s, key=self.lease_key(subject_id),
                      owner=self.holder)
        try:
            acquired = lease.acquire()
        except redis.RedisError as exc:
            # Without the lease no run may start; the due time brings the subject back.
            log.warning("lease_unavailable", error=type(exc).__name__, **{self.kind.log_key: str(subject_id)})
            return Outcome.BUSY
        if not acquired:
            metrics.lock_acquired.labels(outcome="busy").inc()
            log.info("lease_busy", **{self.kind.log_key: str(subject_id)})
            return Outcome.BUSY
        metrics.lock_acquired.labels(outcome="acquired").inc()
        ticket: Ticket[S] | None = None
        seen: Seen | None = None
        outcome = Outcome.SUPERSEDED
        try:
            # Counted before any checkpoint is read: a saved checkpoint never lifts the run limit.
            try:
                ticket, seen = self._count_through_outage(subject_id, lease)
            except LeaseLost:
                outcome = Outcome.BUSY  # our database was down for longer than the lease; another run has it
                return outcome
            if ticket is None:
                outcome = Outcome.NOTHING
                return outcome
            metrics.session_runs.inc()
            structlog.contextvars.bind_contextvars(**{self.kind.log_key: str(subject_id)}, run=ticket.run)
            outcome = self._bounded_steps(ticket, lease)
            return outcome
        except VerbatimError as exc:
            # Counting failed (database down): nothing was counted; the due time brings it back.
            log.warning("run_not_started", error=f"{type(exc).__name__}: {exc}"[:300])
            outcome = Outcome.FAULT
            return outcome
        finally:
            if outcome is Outcome.CANCELLED and ticket is not None:
                self._teardown(ticket, lease)
            else:
                self._release(lease)
                self._settle(subject_id, ticket, seen, outcome)
                if ticket is not None:
                    self.kind.after(ticket, outcome)
                log.info("run_finished", outcome=outcome.value)
            metrics.runs_ended.labels(kind=self.kind.name, outcome=outcome.value).inc()
            structlog.contextvars.unbind_contextvars(self.kind.log_key, "run")

    # --- steps 2 and 3 ------------------------------------------------------------------
    def _count(self, subject_id: uuid.UUID) -> tuple[Ticket[S] | None, Seen | None]:
        """The ticket (None: nothing to do) and the row as it was before counting (what NOTHING may clear)."""
        try:
            with db_session(self.store.url) as db:
                # Locked and read first: with nothing to do, the count is rolled back and only a due time
                # still exactly as read here may be cleared (an admin retry meanwhile keeps its own).
                seen = self.store.peek(db, subject_id)
                counted = self.store.count(db, subject_id, self.limits.lease_ttl_s, self.limits.deadline_s,
                                           self.holder)
                state = self.kind.load(db, subject_id)
                if state is None:
                    db.rollback()  # nothing to do: the count is not kept
                    return None, seen
        except Exception as exc:
            raise VerbatimError(f"could not count the run: {exc}") from exc
        return Ticket(subject_id, counted.run, counted.fence, counted.overdue, state), seen

    def _count_through_outage(self, subject_id: uuid.UUID, lease: Lease) -> tuple[Ticket[S] | None, Seen | None]:
        """``_count``, tried again with backoff while our own database is unreachable — this message kept,
        the lease held (its heartbeat renews it) — for up to ``outage_refund_budget_s`` and until a drain.

        A message dropped on a failed count leaves its subject to its next look (``claim_due`` pushed it
        ``stall_s`` ahead): minutes after the outage ended. Kept, the run starts as soon as the database
        answers, and the messages behind it stay in the queue instead of being dropped one by one; none
        is sent twice. Raises VerbatimError (nothing counted) past the budget or for any other fault;
        LeaseLost if the lease went meanwhile.
        """
        backoff = Backoff(f"worker:{self.kind.name}", base_s=0.25, max_s=max(0.25, self.limits.outage_backoff_max_s))
        deadline = time.monotonic() + self.limits.outage_refund_budget_s
        while True:
            try:
                counted = self._count(subject_id)
            except VerbatimError as exc:
                backend = backend_of(exc)
                if backend is None:
                    raise
                wait = backoff.failed(backend, exc)
                if time.monotonic() + wait > deadline or self.cancelled():
                    raise
                time.sleep(wait)
                lease.check()
                continue
            if backoff.failures:
                backoff.ok()
                log.info("run_counted_after_outage", **{self.kind.log_key: str(subject_id)})
            return counted

    def _bounded_steps(self, ticket: Ticket[S], lease: Lease) -> Outcome:
        try:
            if ticket.run > self.limits.max_runs:
                log.warning("run_limit_reached", runs=ticket.run)
                self.kind.give_up(ticket, INTERRUPTED, f"gave up after {ticket.run - 1} runs")
                return Outcome.INTERRUPTED
            if ticket.overdue:
                log.warning("run_deadline_exceeded", deadline_s=self.limits.deadline_s)
                self.kind.give_up(ticket, DEADLINE_EXCEEDED,
                                  f"not finished {self.limits.deadline_s:.0f} s after it was created")
                return Outcome.FAILED
            reason = self.kind.gone(ticket.state)
            if reason is not None:
                log.warning("run_subject_gone")
                self.kind.give_up(ticket, SUBJECT_GONE, reason)
                return Outcome.FAILED
            return self.kind.steps(ticket, lease)
        except RunCancelled:
            log.info("run_cancelled")
            return Outcome.CANCELLED
        except LeaseLost as exc:
            # Lost the lease without a newer run having counted (Redis restarted or flushed: leases
            # are not persisted) is not the session's fault: give the run back — fenced, so it
            # succeeds only while no newer run exists — and make it due at once.
            refunded = self._refund_quietly(ticket)
            log.warning("run_superseded", reason=type(exc).__name__, refunded=refunded)
            return Outcome.SUPERSEDED
        except RunStopped as exc:
            # Also when recording a failure found a newer run: this run writes nothing more.
            log.warning("run_superseded", reason=type(exc).__name__)
            return Outcome.SUPERSEDED
        except (IllegalTransition, NotFound) as exc:
            # Someone moved the subject on (withdrawn): nothing more to do here.
            log.warning("run_moved_on", error=str(exc)[:300])
            return Outcome.SUPERSEDED
        except Exception as exc:  # noqa: BLE001 - no fault escapes a run; the run stays counted (bounded)
            backend = backend_of(exc)
            if backend is not None:
                # Our own server unreachable is not the subject's fault: give the run back, as for
                # a transient vendor fault (the deadline still bounds the subject).
                log.warning("run_outage", backend=backend, error=type(exc).__name__)
                self._refund_through_outage(ticket, backend)
                return Outcome.RETRY_LATER
            log.error("run_fault", error=f"{type(exc).__name__}: {exc}"[:500],
                      expected=isinstance(exc, VerbatimError))
            return Outcome.FAULT

    def _refund_through_outage(self, ticket: Ticket[S], backend: str) -> bool:
        """Give the run back, due at once, trying with backoff while the database is down.

        Due at once, not ``retry_later_s`` later (a vendor's pause): the refund landing means the
        database answers again, so the sweep sends the subject within a tick — one message, since this
        run's own was consumed (a broker still down: the sweep tries again each tick).

        Runs while this run still holds its lease (the heartbeat renews it through a database
        outage), so no newer run can be counted before the refund lands. Bounded by
        ``outage_refund_budget_s`` and by the drain; past either the run stays counted
        (``run_outage_refund_lost``) and the lease-expiry due time brings the subject back.
        """
        backoff = Backoff(f"worker:{self.kind.name}", base_s=0.25, max_s=max(0.25, self.limits.outage_backoff_max_s))
        deadline = time.monotonic() + self.limits.outage_refund_budget_s
        while True:
            try:
                refunded = self.store.refund(ticket.subject_id, ticket.fence, OUTAGE_DUE_S)
            except Exception as exc:  # noqa: BLE001 - retried below, within the budget
                wait = backoff.failed(backend_of(exc) or backend, exc)
                if time.monotonic() + wait > deadline or self.cancelled():
                    log.error("run_outage_refund_lost", error=type(exc).__name__)
                    return False
                time.sleep(wait)
                continue
            backoff.ok()
            if refunded:
                metrics.outage_refunds.labels(kind=self.kind.name, backend=backend).inc()
            return refunded

    def _refund_quietly(self, ticket: Ticket[S]) -> bool:
        try:
            return self.store.refund(ticket.subject_id, ticket.fence, 0.0)
        except Exception:  # noqa: BLE001 - the lease-expiry due time stands
            return False

    # --- step 7 -------------------------------------------------------------------------
    def _release(self, lease: Lease) -> None:
        try:
            lease.release()
        except redis.RedisError as exc:
            log.warning("lease_release_failed", error=type(exc).__name__)  # it expires by its TTL

    def _settle(self, subject_id: uuid.UUID, ticket: Ticket[S] | None, seen: Seen | None, outcome: Outcome) -> None:
        """Write when to look at the subject next, each write conditional on what this run read (its fence, or
        the row as read before an uncounted run). A failure here is logged: the lease-expiry due time stands."""
        try:
            if outcome is Outcome.NOTHING:
                if seen is not None:
                    self.store.set_due(seen, None)
            elif ticket is None:
                return
            elif outcome is Outcome.PARKED:
                # Released above, before this write: once parked, the sweep may hand the subject to any
                # worker, and a lease still held would only make that run BUSY. A park that fails to
                # write leaves the lease-expiry due time: a dead-run recheck, then a counted run.
                self.store.park(subject_id, ticket.fence, self.limits.park_s)
            elif outcome is Outcome.RETRY_LATER:
                self.store.refund(subject_id, ticket.fence, self.limits.retry_later_s)
            elif outcome is Outcome.FAULT:
                self.store.settle(subject_id, ticket.fence, self.limits.retry_later_s)
            elif outcome in FINAL:
                self.store.settle(subject_id, ticket.fence, None)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.warning("run_settle_failed", outcome=outcome.value, error=type(exc).__name__)

    def _teardown(self, ticket: Ticket[S], lease: Lease) -> None:
        """A run cancelled by a drain: refund, release, re-queue, end event — on one wall-clock budget.

        Saved state is kept (the vendor's copy is what the next run resumes from). If a write runs
        out of budget, the end event carries ``teardown_persist_timeout`` and the due time
        (at the lease's expiry) brings the subject back.
        """
        lim = self.limits
        teardown = Teardown(str(ticket.subject_id), ticket.run, lim.teardown_budget_s, lim.teardown_attempt_timeout_s)
        # A cooperative cancel is not a crash: it must not bring the subject closer to its run limit.
        # Due at once, so the sweep re-queues it even if the re-queue below is lost.
        # The holder stays: if the lease release below fails, a restart under this name releases it.
        teardown.write("refund_run", lambda: self.store.refund(ticket.subject_id, ticket.fence, 0.0, ended=False))
        teardown.write("release_lease", lease.release)
        # Re-queue at once so recovery does not wait for the lease to expire.
        teardown.write("requeue", lambda: self.kind.requeue(ticket.subject_id))
        # The end event may use one last attempt past the budget: budget + attempt < window still holds.
        started = teardown.started
        try:
            budgeted(
                "end_event",
                lambda: self.kind.event(ticket, "run_cancelled", teardown.failure_code,
                                        {"teardown_s": round(time.monotonic() - started, 3)}),
                max(lim.teardown_attempt_timeout_s, teardown.deadline - time.monotonic()),
                lim.teardown_attempt_timeout_s,
            )
        except TeardownTimeout:
            log.error("teardown_end_event_lost", failure_code="teardown_persist_timeout")
        teardown.finish(Outcome.CANCELLED.value)
