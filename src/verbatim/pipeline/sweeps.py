"""The sweep process (``verbatim sweeper``; DESIGN.md "Finding dead runs").

Every ``sweep_tick_s`` (2 s), each step isolated from the others (one failing step is
logged and counted, and the rest still run):

(a) due runs, of every kind (capture runs, note runs): ``durable_runs.due_at`` has passed
    (database clock). Lease still held → due again at its expiry (the recheck at lease expiry);
    work outstanding and no lease → enqueued (due again ``stall_s`` later, in case the message is lost) —
    unless its message is still waiting in the queue (``queue.waiting``: then it cannot have been lost,
    and it is looked at again ``stall_s`` later), so the queue holds about one message per waiting
    subject however long workers stay busy; nothing left → cleared. Recovery from a killed run is
    bounded by the lease TTL plus one tick.
(a') parked sessions (``verbatim.pipeline.parked``): their look-up time has passed — the vendor
    is asked about all of them in one list call; the done ones are enqueued. ``claim_due`` in
    (a) never claims a parked row, so a parked session is never mistaken for a dead run.
(b) stalled subjects of every kind (the safety net): work outstanding, no due time, no write
    for ``stall_s`` (180 s) → due now (``RunStore.mark_stalled``; the ``verbatim_runs_unwatched``
    gauge counts them before then).
(c) the outbox: pending vendor deletes, file deletes and webhooks, retried with backoff.

And every ``sweep_interval_s`` (60 s), claimed in ``sweep_schedule`` so two sweep processes
never run the same one twice in a period:

(d) stranded vendor jobs: ours (tagged), older than ``vendor_job_max_age_s``, referenced by
    no live session → deleted; a live session still pointing at one is reported, not stripped.
(e) orphan audio: recordings (and partial uploads) with no live session, unchanged for
    ``orphan_audio_grace_s`` → deleted; recordings that stopped arriving (a deferred-length
    upload, or a recorder's part, holding bytes, with none for ``recording_stall_s``) → finished
    with what arrived as a partial-recording session (``finish_stalled``, given by the sweeper
    command: ``verbatim.api.recordings.finish_stalled``) — never deleted; other resumable (tus)
    uploads past ``tus_expiry_s`` → deleted.
(f) the analysis re-emit (``verbatim.reliability.sweep``).
(g) retention: transcripts past their clinic's retention window (``verbatim.pipeline.retention``).
(h) note retention: signed notes past their own retention (``verbatim.notes.retention``).

Celery beat has no job left: a beat only sent messages to a queue that busy capture workers
serve, which is how sweeps starved. Every step is idempotent: two sweep processes are safe.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import structlog
from sqlalchemy import select, text

from verbatim import keys
from verbatim.context import ProcessContext
from verbatim.db.engine import db_session
from verbatim.db.models import Session, VendorSubmission
from verbatim.durable.outage import Backoff, backend_of
from verbatim.durable.store import RunStore
from verbatim.durable.subjects import Subjects
from verbatim.notes.retention import expire_signed_notes
from verbatim.notes.states import NOTE_SUBJECTS
from verbatim.pipeline.parked import poll_parked
from verbatim.pipeline.retention import expire_transcripts
from verbatim.queue import waiting
from verbatim.resumable import ResumableUploads
from verbatim.sealed.rotate import ROTATION_SUFFIX
from verbatim.states import ACTIVE, CAPTURE_SUBJECTS
from verbatim.telemetry import metrics

log = structlog.get_logger("verbatim.sweep")

LIVE = [s.value for s in ACTIVE] + ["blocked"]
ACTIVE_VALUES = frozenset(s.value for s in ACTIVE)
DUE_BATCH = 200


FinishStalled = Callable[[ProcessContext], int]
"""Finishes the recordings that stopped arriving; returns how many (``verbatim.api.recordings.finish_stalled``)."""


@dataclass
class SweepReport:
    """What one tick did (counts and ids, for logs and tests). ``steps``: step name → done / not_due / error."""

    requeued: list[uuid.UUID] = field(default_factory=list)
    rechecks: int = 0
    stalled: list[uuid.UUID] = field(default_factory=list)
    outbox_done: int = 0
    outbox_failed: int = 0
    vendor_deleted: list[str] = field(default_factory=list)
    vendor_reported: list[str] = field(default_factory=list)
    audio_deleted: int = 0
    uploads_expired: int = 0
    recordings_finished: int = 0  #: recordings that stopped arriving, finished with what arrived
    analysis_reemitted: int = 0
    transcripts_expired: int = 0
    still_queued: int = 0  #: due subjects whose queue message is still waiting (not sent again)
    steps: dict[str, str] = field(default_factory=dict)
    outage: tuple[str, BaseException] | None = None  #: the first backend a step could not reach, and why
    finish_stalled: FinishStalled | None = field(default=None, repr=False)  #: step (e)'s finisher, if any

    @property
    def errors(self) -> list[str]:
        return [name for name, result in self.steps.items() if result == "error"]


def tick(ctx: ProcessContext, finish_stalled: FinishStalled | None = None) -> SweepReport:
    """One pass of every step; each one isolated. Periodic steps run only when their period is due.

    ``finish_stalled``: step (e)'s finisher of recordings that stopped arriving (the sweeper
    command passes the API's; without one, such uploads are kept, never deleted).
    """
    report = SweepReport()
    report.finish_stalled = finish_stalled
    _step(report, "stalled", lambda: mark_stalled_due(ctx, report))
    _step(report, "parked", lambda: report.requeued.extend(poll_parked(ctx).queued))
    _step(report, "due_runs", lambda: requeue_due(ctx, report))
    _step(report, "outbox", lambda: _outbox(ctx, report))
    for name, fn in (("stranded_vendor_jobs", delete_stranded_vendor_jobs), ("orphan_audio", delete_orphan_audio),
                     ("analysis_reemit", _analysis_reemit), ("retention", expire_transcripts),
                     ("note_retention", expire_signed_notes)):
        # Claiming the period reads the database too: inside the step's guard, so an outage is
        # one failed step (retried next tick), never an exception out of the sweep process.
        _step(report, name, lambda name=name, fn=fn: _periodic(ctx, report, name, fn))  # type: ignore[misc]
    if (report.requeued or report.stalled or report.outbox_done or report.outbox_failed or report.vendor_deleted
            or report.vendor_reported or report.audio_deleted or report.uploads_expired or report.errors
            or report.transcripts_expired or report.recordings_finished):
        log.info(
            "sweep_done", requeued=len(report.requeued), rechecks=report.rechecks, stalled=len(report.stalled),
            outbox_done=report.outbox_done, outbox_failed=report.outbox_failed,
            vendor_deleted=len(report.vendor_deleted), vendor_reported=len(report.vendor_reported),
            audio_deleted=report.audio_deleted, uploads_expired=report.uploads_expired,
            recordings_finished=report.recordings_finished, errors=report.errors,
        )
    return report


def _step(report: SweepReport, name: str, fn: Callable[[], object]) -> None:
    try:
        report.steps[name] = "not_due" if fn() is NOT_DUE else "done"
    except Exception as exc:  # noqa: BLE001 - one failing sweep must not stop the others
        report.steps[name] = "error"
        backend = backend_of(exc)
        if backend is not None and report.outage is None:
            report.outage = (backend, exc)
        metrics.sweep_errors.labels(sweep=name).inc()
        log.warning("sweep_failed", sweep=name, error=f"{type(exc).__name__}: {exc}"[:300])


NOT_DUE = object()  #: what a periodic step returns when its period already ran


def _periodic(ctx: ProcessContext, report: SweepReport, name: str,
              fn: Callable[[ProcessContext, SweepReport], object]) -> object:
    if not _claim_period(ctx, name):
        return NOT_DUE
    return fn(ctx, report)


def _claim_period(ctx: ProcessContext, name: str) -> bool:
    """Take this period of a periodic sweep (database clock); False if it already ran in this period."""
    with db_session(ctx.repo.url) as db:
        return db.execute(
            text("""
                INSERT INTO sweep_schedule (name, next_at) VALUES (:name, now() + make_interval(secs => :every))
                ON CONFLICT (name) DO UPDATE SET next_at = EXCLUDED.next_at WHERE sweep_schedule.next_at <= now()
                RETURNING name
            """),
            {"name": name, "every": ctx.settings.sweep_interval_s},
        ).first() is not None


def _mark_tick(ctx: ProcessContext) -> None:
    """Record when the last tick finished (``sweep_schedule`` row ``tick``; the ops metrics read it)."""
    try:
        with db_session(ctx.repo.url) as db:
            db.execute(text("INSERT INTO sweep_schedule (name, next_at) VALUES ('tick', now()) "
                            "ON CONFLICT (name) DO UPDATE SET next_at = now()"))
    except Exception as exc:  # noqa: BLE001 - the metric then shows the sweep as late, which it is
        log.warning("sweep_mark_failed", error=type(exc).__name__)


def run_forever(ctx: ProcessContext, stop: threading.Event, finish_stalled: FinishStalled | None = None) -> None:
    """The sweep process's loop: a tick every ``sweep_tick_s`` until ``stop`` is set (SIGTERM);
    ``finish_stalled`` as for `tick`.

    A tick that ends after the next one was due logs ``sweep_late`` (how late, in seconds).
    """
    period = ctx.settings.sweep_tick_s
    log.info("sweeper_started", tick_s=period, interval_s=ctx.settings.sweep_interval_s)
    backoff = Backoff("sweeper", base_s=period, max_s=max(period, ctx.settings.outage_backoff_max_s))
    next_at = time.monotonic()
    while not stop.is_set():
        try:
            report = tick(ctx, finish_stalled)
            _mark_tick(ctx)
        except Exception as exc:  # noqa: BLE001 - no fault ends the sweep process; the next tick tries again
            log.error("sweep_tick_failed", error=f"{type(exc).__name__}: {exc}"[:300])
            report = SweepReport(outage=(backend_of(exc) or "unknown", exc))
        if report.outage is not None:
            # Our own server is down: every step would fail the same way. Wait longer each time
            # (up to outage_backoff_max_s), so a long outage is not hammered, then tick again.
            stop.wait(backoff.failed(*report.outage))
            next_at = time.monotonic()
            continue
        backoff.ok()
        next_at += period
        late = time.monotonic() - next_at
        if late > 0:
            log.info("sweep_late", late_s=round(late, 3))
            next_at = time.monotonic()
        stop.wait(max(0.0, next_at - time.monotonic()))
    log.info("sweeper_stopped")


# --- (a) and (b): due runs, stalled sessions ----------------------------------------------
@dataclass(frozen=True)
class DueKind:
    """What the due-runs step needs of one kind of durable run (capture, note)."""

    store: RunStore
    lease_key: Callable[[uuid.UUID], str]
    outstanding: Callable[[list[uuid.UUID]], set[uuid.UUID]]  #: which subjects still have work (one query)
    enqueue: Callable[[uuid.UUID], None]
    subjects: Subjects  #: where its subjects live (the stall net, run states)
    deadline_s: float  #: a subject's deadline when the stall net makes its first row


def due_kinds(ctx: ProcessContext) -> list[DueKind]:
    """Every kind of durable run the sweep looks after."""
    from verbatim.notes.repo import NoteRepo
    from verbatim.notes.run import note_lease

    def active_sessions(ids: list[uuid.UUID]) -> set[uuid.UUID]:
        with db_session(ctx.repo.url) as db:  # one read for the whole batch
            return set(db.execute(select(Session.id).where(Session.id.in_(ids),
                                                           Session.status.in_(ACTIVE_VALUES))).scalars())

    notes = NoteRepo(ctx.repo.url)
    s = ctx.settings
    return [DueKind(ctx.repo.runs, keys.lease, active_sessions, ctx.queue.enqueue, CAPTURE_SUBJECTS,
                    s.session_deadline_s),
            DueKind(notes.runs, note_lease, notes.runnable, ctx.queue.enqueue_note, NOTE_SUBJECTS, s.note_deadline_s)]


def requeue_due(ctx: ProcessContext, report: SweepReport) -> None:
    """Look at every run, of every kind, whose due time has passed (see the module docstring, (a))."""
    for kind in due_kinds(ctx):
        _requeue_due_of(ctx, kind, report)


def _requeue_due_of(ctx: ProcessContext, kind: DueKind, report: SweepReport) -> None:
    s = ctx.settings
    store = kind.store
    due = store.claim_due(DUE_BATCH, s.stall_s)
    if not due:
        return
    outstanding = kind.outstanding([c.subject_id for c in due])
    with db_session(ctx.repo.url) as db:
        # Seconds since each row's last write: for a dead run, since it was counted (recovery latency).
        quiet: dict[uuid.UUID, float] = {row[0]: float(row[1]) for row in db.execute(text(
            "SELECT subject_id, extract(epoch FROM now() - updated_at) FROM durable_runs "
            "WHERE kind = :kind AND subject_id = ANY(:ids) AND runs > 0"),
            {"kind": store.kind, "ids": [c.subject_id for c in due]})}
    # A subject whose message still waits in the queue (busy workers) is not sent again: its
    # message cannot have been lost, and every duplicate would make the next waiting session wait
    # longer. claim_due pushed its due time stall_s ahead: it is looked at again then.
    queued = waiting(ctx.redis, [c.subject_id for c in due if c.subject_id in outstanding])
    # Every write below is conditional on the row as claimed: a run counted meanwhile, or an admin
    # retry, keeps the due time it wrote.
    for claim in due:
        sid = claim.subject_id
        pttl = int(ctx.redis.pttl(kind.lease_key(sid)))
        if pttl > 0:
            # Someone holds the lease: if its holder is dead, it expires in pttl ms — look then.
            store.set_due(claim, pttl / 1000 + 0.05)
            report.rechecks += 1
            continue
        if sid not in outstanding:
            store.set_due(claim, None)
            continue
        if sid in queued:
            report.still_queued += 1
            continue
        try:
            kind.enqueue(sid)
        except Exception:
            # The broker is down: look again next tick, not a whole stall window later.
            store.set_due(claim, s.sweep_tick_s)
            raise
        metrics.sweep_requeued.inc()
        if sid in quiet:  # a run was counted and nobody holds it now: its run died (or its message was lost)
            metrics.recoveries.labels(source="sweep").inc()
            metrics.recovery_latency.observe(quiet[sid])
        report.requeued.append(sid)


def mark_stalled_due(ctx: ProcessContext, report: SweepReport) -> None:
    """Subjects of every kind with work outstanding, no due time and no write for ``stall_s`` (database
    clock) → due now."""
    for kind in due_kinds(ctx):
        with db_session(ctx.repo.url) as db:
            report.stalled.extend(kind.store.mark_stalled(db, kind.subjects.live_sql(), ctx.settings.stall_s,
                                                          kind.deadline_s, DUE_BATCH))


def _outbox(ctx: ProcessContext, report: SweepReport) -> None:
    delivered = ctx.cleanup.deliver()
    report.outbox_done += len(delivered.done)
    report.outbox_failed += len(delivered.failed)


def _analysis_reemit(ctx: ProcessContext, report: SweepReport) -> None:
    from verbatim.reliability.sweep import sweep as reliability_sweep

    report.analysis_reemitted = len(reliability_sweep(ctx.redis, ctx.repo.url).reemitted)


# --- (d) and (e): stranded vendor jobs, orphan audio -----------------------------------------
def delete_stranded_vendor_jobs(ctx: ProcessContext, report: SweepReport) -> None:
    """Delete our vendor jobs older than the max age that no live session references.

    "References" covers both a saved job id and a job a live session may still adopt (it has
    neither a job id nor a checkpoint yet): stripping either would lose its only copy. Such
    jobs are reported instead.
    """
    cutoff = datetime.now(UTC) - timedelta(seconds=ctx.settings.vendor_job_max_age_s)
    owners: dict[str, uuid.UUID] = {}
    with db_session(ctx.repo.url) as db:
        for job_id, sid in db.execute(
            select(VendorSubmission.vendor_job_id, VendorSubmission.session_id).where(
                VendorSubmission.vendor_job_id.is_not(None),
                VendorSubmission.deleted_at.is_(None),
                VendorSubmission.submitted_at < cutoff,
            )
        ):
            if job_id is not None:
                owners[job_id] = sid
    # One attempt per call: a tick must not wait out a retry budget (the next period tries again).
    for job in ctx.recognizer.list_jobs(created_before=cutoff, once=True):
        if job.session_id is not None:  # tagged at submission: ours
            owners[job.job_id] = job.session_id
    if not owners:
        return
    with db_session(ctx.repo.url) as db:
        live = {
            row.id: row
            for row in db.execute(
                select(Session.id, Session.vendor_job_id, Session.raw_turns.is_(None).label("waiting")).where(
                    Session.id.in_(set(owners.values())), Session.status.in_(LIVE)
                )
            )
        }
    for job_id, sid in sorted(owners.items()):
        session = live.get(sid)
        if session is not None and (
            session.vendor_job_id == job_id or (session.vendor_job_id is None and session.waiting)
        ):
            log.warning("stranded_vendor_job_still_referenced", job_id=job_id, session_id=str(sid))
            report.vendor_reported.append(job_id)
            continue
        ctx.recognizer.delete(job_id, once=True)
        ctx.repo.mark_vendor_deleted(job_id, "stranded")
        report.vendor_deleted.append(job_id)


def _rotation_copy_in_use(path: Path, grace_s: float) -> bool:
    """Whether ``path`` is a key rotation's copy (``.<name>.rekey``) that may still be in use.

    The copy carries its original's mtime (so it is judged by the same age once swapped in), so
    its age as a copy is its ctime, which the copy's ``utime`` and the exchange set to now. A
    copy older than the grace by ctime is a killed rotation's leftover: an orphan like any other.
    """
    if not path.name.endswith(ROTATION_SUFFIX):
        return False
    try:
        return path.stat().st_ctime >= time.time() - grace_s
    except FileNotFoundError:
        return True  # gone already: nothing to delete


def delete_orphan_audio(ctx: ProcessContext, report: SweepReport) -> None:
    """Delete recordings with no live session, and partial uploads, past the grace period;
    and resumable (tus) uploads past their expiry (``tus_expiry_s`` after creation).

    The grace counts from when a file reached its current folder (the volume and the tus
    finalize set its mtime on arrival). Ownership is read *after* listing, and each file's age
    is checked again right before its delete: a file claimed or committed meanwhile stays.
    """
    grace = ctx.settings.orphan_audio_grace_s
    volume = ctx.volume
    old_audio = [p for p in volume.older_than(volume.audio_dir, grace) if not _rotation_copy_in_use(p, grace)]
    if old_audio:
        ids = {}
        for path in old_audio:
            try:
                ids[uuid.UUID(path.name.split(".")[0])] = path
            except ValueError:
                ids[uuid.uuid4()] = path  # not a name we write: nobody owns it
        with db_session(ctx.repo.url) as db:
            live = set(
                db.execute(select(Session.id).where(Session.id.in_(ids), Session.status.in_(LIVE))).scalars()
            )
        for sid, path in ids.items():
            if sid not in live and volume.delete_stale(path, grace):
                report.audio_deleted += 1
    for path in volume.older_than(volume.incoming_dir, grace):
        if _rotation_copy_in_use(path, grace):
            continue
        if volume.delete_stale(path, grace):
            report.audio_deleted += 1
    if report.finish_stalled is not None:
        # Before the expiry sweep (which never deletes these anyway): write before delete.
        report.recordings_finished += report.finish_stalled(ctx)
    uploads = ResumableUploads(ctx.settings.tus_dir, ctx.settings.tus_expiry_s, ctx.volume.ring)
    report.uploads_expired += uploads.delete_expired()
