"""Sweeps, run by Celery beat every ``sweep_interval_s`` (DESIGN.md "Finding dead runs").

(a) stalled sessions: outstanding work, no live lease, not waiting in the queue → re-queued.
(b) stranded vendor jobs: ours (tagged), older than ``vendor_job_max_age_s``, referenced by
    no live session → deleted; a live session still pointing at one is reported, not stripped.
(c) orphan audio: recordings (and partial uploads) with no live session, older than
    ``orphan_audio_grace_s`` → deleted; resumable (tus) uploads past ``tus_expiry_s`` → deleted.

Every sweep is idempotent, and a Redis lock keeps two beats from sweeping at once.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import structlog
from sqlalchemy import select

from verbatim import keys
from verbatim.db.engine import db_session
from verbatim.db.models import Session, VendorSubmission
from verbatim.leases import is_held
from verbatim.pipeline.context import RunContext
from verbatim.resumable import ResumableUploads
from verbatim.states import ACTIVE
from verbatim.telemetry import metrics

log = structlog.get_logger("verbatim.sweep")

LIVE = [s.value for s in ACTIVE] + ["blocked"]


@dataclass
class SweepReport:
    """What one sweep pass did (counts and ids, for logs and tests)."""

    requeued: list[uuid.UUID] = field(default_factory=list)
    vendor_deleted: list[str] = field(default_factory=list)
    vendor_reported: list[str] = field(default_factory=list)
    audio_deleted: int = 0
    uploads_expired: int = 0
    skipped: bool = False


def sweep_all(ctx: RunContext) -> SweepReport:
    """Run the three sweeps under the sweep lock; a second beat finds it held and skips."""
    lock_ms = max(1000, int(ctx.settings.sweep_interval_s * 1000) - 500)
    token = uuid.uuid4().hex
    if not ctx.redis.set(keys.SWEEP_LOCK, token, nx=True, px=lock_ms):
        return SweepReport(skipped=True)
    report = SweepReport()
    requeue_stalled(ctx, report)
    delete_stranded_vendor_jobs(ctx, report)
    delete_orphan_audio(ctx, report)
    if (report.requeued or report.vendor_deleted or report.vendor_reported or report.audio_deleted
            or report.uploads_expired):
        log.info(
            "sweep_done", requeued=len(report.requeued), vendor_deleted=len(report.vendor_deleted),
            vendor_reported=len(report.vendor_reported), audio_deleted=report.audio_deleted,
            uploads_expired=report.uploads_expired,
        )
    return report


def requeue_stalled(ctx: RunContext, report: SweepReport) -> None:
    """Re-queue sessions with outstanding work that nobody is doing and nothing is queued for.

    The query uses the partial index ``ix_sessions_active``: finished sessions cost nothing.
    A session touched in the last lease TTL is left alone (its run may be just starting).
    """
    cutoff = datetime.now(UTC) - timedelta(seconds=ctx.settings.lease_ttl_s / 4)
    interval_ms = ctx.settings.sweep_interval_s * 1000
    for sid in ctx.repo.active_since(cutoff):
        if is_held(ctx.redis, sid):
            # If this lease's holder is dead, it expires before the next sweep: check again right
            # then, so recovery is bounded by the lease, not by the lease plus a sweep period.
            pttl = int(ctx.redis.pttl(keys.lease(sid)))
            if 0 < pttl < interval_ms:
                ctx.queue.recheck_at_lease_expiry(sid, pttl / 1000 + 0.5)
            continue
        if recheck(ctx, sid):
            report.requeued.append(sid)


def recheck(ctx: RunContext, session_id: uuid.UUID) -> bool:
    """Re-queue one session if it has outstanding work, no live lease and nothing queued; True if it did."""
    if is_held(ctx.redis, session_id) or ctx.queue.is_queued(session_id):
        return False
    if ctx.repo.get(session_id).status not in {s.value for s in ACTIVE}:
        return False
    ctx.queue.enqueue(session_id)
    metrics.sweep_requeued.inc()
    return True


def delete_stranded_vendor_jobs(ctx: RunContext, report: SweepReport) -> None:
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
    for job in ctx.recognizer.list_jobs(created_before=cutoff):
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
        ctx.recognizer.delete(job_id)
        ctx.repo.mark_vendor_deleted(job_id, "stranded")
        report.vendor_deleted.append(job_id)


def delete_orphan_audio(ctx: RunContext, report: SweepReport) -> None:
    """Delete recordings with no live session, and partial uploads, past the grace period;
    and resumable (tus) uploads past their expiry (``tus_expiry_s`` after creation)."""
    grace = ctx.settings.orphan_audio_grace_s
    volume = ctx.volume
    old_audio = volume.older_than(volume.audio_dir, grace)
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
            if sid not in live and volume.delete(path):
                report.audio_deleted += 1
    for path in volume.older_than(volume.incoming_dir, grace):
        if volume.delete(path):
            report.audio_deleted += 1
    uploads = ResumableUploads(ctx.settings.tus_dir, ctx.settings.tus_expiry_s)
    report.uploads_expired += uploads.delete_expired()
