"""Analysis requests from publish to re-emission: the ``reliability_analyses`` ledger and its sweep.

1. ``record_request`` — inside the publish transaction (``Repo.publish``): the session now
   needs an analysis. PostgreSQL is the record of what must be analysed, so an event lost
   with Redis is never a lost analysis.
2. ``emit_requested`` — after the capture run released its lease: the event goes on the
   main stream and the row is marked emitted. Best-effort: it never raises (Redis down →
   logged; the sweep emits it later).
3. ``sweep`` — run by the sweep process (``verbatim sweeper``) with the other periodic
   sweeps: re-emits requests never emitted (older than ``sweep_grace_s``) or emitted longer
   ago than ``reemit_after_s`` and still not analysed, and purges the suggestions of withdrawn sessions (they quote the
   transcript). Idempotent: a request emitted twice is analysed once (lock + guarded commit).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta

import redis
import structlog
from sqlalchemy import Engine, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session as OrmSession

from verbatim.db.engine import engine as shared_engine
from verbatim.db.models import Session
from verbatim.reliability.models import ReliabilityAnalysis, ReliabilitySuggestion
from verbatim.reliability.settings import ReliabilitySettings, get_reliability_settings
from verbatim.reliability.streams import AnalysisEvent, Streams, write_progress
from verbatim.states import SessionStatus

log = structlog.get_logger("verbatim.reliability")


# --- the ledger ----------------------------------------------------------------------------------


def record_request(db: OrmSession, session_id: uuid.UUID) -> None:
    """Note (in the caller's transaction) that the session needs an analysis.

    A session is published once (READY ends its runs); should it ever be published again,
    the request already recorded stands.
    """
    db.execute(
        pg_insert(ReliabilityAnalysis).values(session_id=session_id).on_conflict_do_nothing(
            index_elements=[ReliabilityAnalysis.session_id]
        )
    )


def mark_emitted(eng: Engine, session_ids: Iterable[uuid.UUID]) -> None:
    """The requests are on the main stream now (and no longer dead letters)."""
    ids = list(session_ids)
    if ids:
        with OrmSession(eng) as db, db.begin():
            db.execute(
                update(ReliabilityAnalysis).where(ReliabilityAnalysis.session_id.in_(ids))
                .values(emitted_at=func.now(), dead_lettered_at=None)
            )


def start_attempt(db: OrmSession, session_id: uuid.UUID) -> bool:
    """Count an analysis attempt; False when the request is already complete (nothing to do).

    A request missing from the ledger (emitted by hand, or published before migration 0002)
    is recorded first.
    """
    record_request(db, session_id)
    completed = db.execute(
        update(ReliabilityAnalysis).where(ReliabilityAnalysis.session_id == session_id)
        .values(attempts=ReliabilityAnalysis.attempts + 1)
        .returning(ReliabilityAnalysis.completed_at)
    ).scalar_one()
    return completed is None


def complete_request(db: OrmSession, session_id: uuid.UUID) -> bool:
    """Mark the analysis complete — only if nobody did (the guard that keeps a late or
    duplicate attempt from storing its suggestions twice). False: already complete."""
    return db.execute(
        update(ReliabilityAnalysis)
        .where(ReliabilityAnalysis.session_id == session_id, ReliabilityAnalysis.completed_at.is_(None))
        .values(completed_at=func.now(), dead_lettered_at=None)
        .returning(ReliabilityAnalysis.session_id)
    ).one_or_none() is not None


def mark_dead_lettered(eng: Engine, session_id: uuid.UUID) -> None:
    """The request went to the dead-letter stream: the sweep leaves it to an admin."""
    with OrmSession(eng) as db, db.begin():
        db.execute(
            update(ReliabilityAnalysis)
            .where(ReliabilityAnalysis.session_id == session_id, ReliabilityAnalysis.completed_at.is_(None))
            .values(dead_lettered_at=func.now())
        )


# --- emitting ------------------------------------------------------------------------------------


def emit_requested(
    client: redis.Redis,
    session_id: uuid.UUID,
    therapist_id: uuid.UUID | None = None,
    *,
    database_url: str | None = None,
    settings: ReliabilitySettings | None = None,
) -> bool:
    """Publish ``reliability.analysis.requested`` for a session; True when it reached Redis.

    Never raises. ``therapist_id`` None → read from the session (needs ``database_url``).
    With ``database_url`` the request is marked emitted; without it (or if that write
    fails) the sweep emits it once more later, which is harmless.
    """
    s = settings or get_reliability_settings()
    try:
        if therapist_id is None:
            if database_url is None:
                raise ValueError("emit_requested needs therapist_id or database_url")
            with OrmSession(shared_engine(database_url)) as db:
                therapist_id = db.execute(select(Session.therapist_id).where(Session.id == session_id)).scalar_one()
        _emit(client, s, AnalysisEvent(session_id, therapist_id))
    except Exception as exc:  # noqa: BLE001 - best-effort by contract: the sweep covers every failure here
        log.warning("analysis_emit_failed", session_id=str(session_id), error=type(exc).__name__)
        return False
    if database_url is not None:
        try:
            mark_emitted(shared_engine(database_url), [session_id])
        except Exception as exc:  # noqa: BLE001 - the event is out; an unmarked row only means one more emit
            log.warning("analysis_mark_emitted_failed", session_id=str(session_id), error=type(exc).__name__)
    return True


def _emit(client: redis.Redis, s: ReliabilitySettings, event: AnalysisEvent) -> None:
    pipe = client.pipeline(transaction=True)
    Streams(client, s).publish(event, pipe)
    write_progress(pipe, event.transcript_id, s.progress_ttl_seconds, status="queued", retry_count=0,
                   timestamp_requested=event.timestamp_requested)
    pipe.execute()


# --- the sweep -----------------------------------------------------------------------------------


@dataclass
class SweepReport:
    """What one reliability sweep did."""

    reemitted: list[uuid.UUID] = field(default_factory=list)
    purged: int = 0


def sweep(
    client: redis.Redis, database_url: str, settings: ReliabilitySettings | None = None,
    eng: Engine | None = None,
) -> SweepReport:
    """Re-emit unanalysed requests and purge withdrawn sessions' suggestions (idempotent).

    Stops at the first Redis error (logged): what was not emitted stays due for the next sweep.
    """
    s = settings or get_reliability_settings()
    eng = eng or shared_engine(database_url)
    report = SweepReport(purged=purge_withdrawn(eng))
    a = ReliabilityAnalysis
    due = (
        select(a.session_id, Session.therapist_id)
        .join(Session, Session.id == a.session_id)
        .where(
            a.completed_at.is_(None),
            a.dead_lettered_at.is_(None),
            Session.status == SessionStatus.READY.value,
            ((a.emitted_at.is_(None)) & (a.requested_at < func.now() - timedelta(seconds=s.sweep_grace_s)))
            | (a.emitted_at < func.now() - timedelta(seconds=s.reemit_after_s)),
        )
        .order_by(a.requested_at)
        .limit(s.sweep_batch)
    )
    with OrmSession(eng) as db:
        rows = db.execute(due).all()
    for session_id, therapist_id in rows:
        try:
            _emit(client, s, AnalysisEvent(session_id, therapist_id, metadata={"reemitted": True}))
        except redis.RedisError as exc:
            log.warning("analysis_reemit_failed", error=type(exc).__name__, left=len(rows) - len(report.reemitted))
            break
        report.reemitted.append(session_id)
    mark_emitted(eng, report.reemitted)
    if report.reemitted or report.purged:
        log.info("analysis_sweep_done", reemitted=len(report.reemitted), purged=report.purged)
    return report


def purge_withdrawn(eng: Engine) -> int:
    """Delete the suggestions of withdrawn sessions and close their requests; returns rows deleted.

    Withdrawal (``verbatim.pipeline.withdraw``) is the durable write that makes these copies
    of the transcript redundant. The action rows stay: they hold no text.
    """
    withdrawn = select(Session.id).where(Session.status == SessionStatus.DELETED.value)
    with OrmSession(eng) as db, db.begin():
        purged = db.execute(
            delete(ReliabilitySuggestion).where(ReliabilitySuggestion.session_id.in_(withdrawn))
            .returning(ReliabilitySuggestion.id)
        ).all()
        db.execute(
            update(ReliabilityAnalysis)
            .where(ReliabilityAnalysis.completed_at.is_(None), ReliabilityAnalysis.session_id.in_(withdrawn))
            .values(completed_at=func.now())
        )
    return len(purged)
